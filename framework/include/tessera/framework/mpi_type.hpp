// The one place where C++ element types meet MPI datatypes.
//
// Built-in types map to MPI's own. Any other trivially copyable type travels as its bytes (a
// contiguous datatype of sizeof(T) MPI_BYTEs, made and committed once per type). A type that needs a
// real derived datatype (for a heterogeneous cluster, or for an MPI reduction that must see the
// fields) specialises MpiType:
//
//   template <> struct tessera::MpiType<Particle> {
//     static MPI_Datatype get() { static MPI_Datatype t = make_particle_type(); return t; }
//   };
#pragma once

#include <mpi.h>

#include <cstdint>
#include <type_traits>

namespace tessera {

template <class T>
struct MpiType;  // not defined: mpi_type<T>() uses the bytes of T

template <> struct MpiType<std::int8_t> { static MPI_Datatype get() { return MPI_INT8_T; } };
template <> struct MpiType<std::int16_t> { static MPI_Datatype get() { return MPI_INT16_T; } };
template <> struct MpiType<std::int32_t> { static MPI_Datatype get() { return MPI_INT32_T; } };
template <> struct MpiType<std::int64_t> { static MPI_Datatype get() { return MPI_INT64_T; } };
template <> struct MpiType<std::uint8_t> { static MPI_Datatype get() { return MPI_UINT8_T; } };
template <> struct MpiType<std::uint16_t> { static MPI_Datatype get() { return MPI_UINT16_T; } };
template <> struct MpiType<std::uint32_t> { static MPI_Datatype get() { return MPI_UINT32_T; } };
template <> struct MpiType<std::uint64_t> { static MPI_Datatype get() { return MPI_UINT64_T; } };
template <> struct MpiType<float> { static MPI_Datatype get() { return MPI_FLOAT; } };
template <> struct MpiType<double> { static MPI_Datatype get() { return MPI_DOUBLE; } };
template <> struct MpiType<char> { static MPI_Datatype get() { return MPI_CHAR; } };
template <> struct MpiType<bool> { static MPI_Datatype get() { return MPI_CXX_BOOL; } };

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
