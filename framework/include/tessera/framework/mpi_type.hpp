// The one place where C++ element types meet MPI datatypes.
//
// The built-in element types (ElementTraits) map to MPI's own. Any other trivially copyable type
// travels as its bytes (a contiguous datatype of sizeof(T) MPI_BYTEs, made and committed once per
// type). A type that needs a real derived datatype (for a heterogeneous cluster, or for an MPI
// reduction that must see the fields) specialises MpiType:
//
//   template <> struct tessera::MpiType<Particle> {
//     static MPI_Datatype get() { static MPI_Datatype t = make_particle_type(); return t; }
//   };
#pragma once

#include <mpi.h>

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/element_traits.hpp"

namespace tessera {

template <class T>
struct MpiType;  // not defined: mpi_type<T>() uses the bytes of T

namespace detail {

// MPI's predefined datatype for a built-in element type (ElementTraits).
inline MPI_Datatype predefined_mpi_type(ElementKind kind, std::size_t bytes) {
  switch (kind) {
    case ElementKind::boolean: return MPI_CXX_BOOL;
    case ElementKind::character: return MPI_CHAR;
    case ElementKind::signed_integer:
      return bytes == 1 ? MPI_INT8_T : bytes == 2 ? MPI_INT16_T : bytes == 4 ? MPI_INT32_T : MPI_INT64_T;
    case ElementKind::unsigned_integer:
      return bytes == 1 ? MPI_UINT8_T : bytes == 2 ? MPI_UINT16_T : bytes == 4 ? MPI_UINT32_T : MPI_UINT64_T;
    case ElementKind::floating_point: break;
  }
  return bytes == 4 ? MPI_FLOAT : MPI_DOUBLE;
}

}  // namespace detail

// The built-in element types map to MPI's own datatypes.
template <class T>
  requires has_element_traits_v<T>
struct MpiType<T> {
  static MPI_Datatype get() { return detail::predefined_mpi_type(ElementTraits<T>::kind, ElementTraits<T>::bytes); }
};

namespace detail {

template <class T, class = void>
struct has_mpi_type : std::false_type {};
template <class T>
struct has_mpi_type<T, std::void_t<decltype(MpiType<T>::get())>> : std::true_type {};

// A committed MPI datatype of `bytes` contiguous bytes (made once per size, kept until
// MPI_Finalize frees it).
MPI_Datatype contiguous_bytes_type(std::size_t bytes);

}  // namespace detail

// True when T maps to one of MPI's predefined datatypes or a datatype the user declared (the
// built-in reduction operations apply only to the predefined ones).
template <class T>
inline constexpr bool has_mpi_type_v = detail::has_mpi_type<T>::value;

template <class T>
MPI_Datatype mpi_type() {
  static_assert(std::is_trivially_copyable_v<T>, "mpi_type: only trivially copyable types travel through MPI");
  if constexpr (has_mpi_type_v<T>) {
    return MpiType<T>::get();
  } else {
    return detail::contiguous_bytes_type(sizeof(T));
  }
}

}  // namespace tessera
