// The one description of the built-in element types: what kind of value each is, its size, and its
// name. Every library-specific type map derives from it (the MPI datatype in mpi_type.hpp, the io
// DType names and sizes in io.hpp, the HDF5 and NCCL types inside the framework), so a type's name
// and its meaning to each library are written once.
//
//   ElementTraits<std::uint16_t>::kind == ElementKind::unsigned_integer
//   ElementTraits<std::uint16_t>::bytes == 2
//   ElementTraits<float>::name == "float32"
//
// Defined for bool, char, int8..int64, uint8..uint64, float and double; not for other types
// (has_element_traits_v tells), which MPI then moves as bytes and HDF5 does not store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tessera {

enum class ElementKind { boolean, character, signed_integer, unsigned_integer, floating_point };

template <class T>
struct ElementTraits;  // not defined for other types

namespace detail {
template <ElementKind Kind, std::size_t Bytes, class T>
struct ElementTraitsOf {
  static_assert(sizeof(T) == Bytes, "ElementTraits: unexpected size of a built-in type");
  static constexpr ElementKind kind = Kind;
  static constexpr std::size_t bytes = Bytes;
};
}  // namespace detail

#define TESSERA_ELEMENT_TRAITS(T, KIND, BYTES, NAME)                                  \
  template <>                                                                         \
  struct ElementTraits<T> : detail::ElementTraitsOf<ElementKind::KIND, BYTES, T> {    \
    static constexpr const char* name = NAME;                                         \
  };
TESSERA_ELEMENT_TRAITS(bool, boolean, 1, "bool")
TESSERA_ELEMENT_TRAITS(char, character, 1, "char")
TESSERA_ELEMENT_TRAITS(std::int8_t, signed_integer, 1, "int8")
TESSERA_ELEMENT_TRAITS(std::int16_t, signed_integer, 2, "int16")
TESSERA_ELEMENT_TRAITS(std::int32_t, signed_integer, 4, "int32")
TESSERA_ELEMENT_TRAITS(std::int64_t, signed_integer, 8, "int64")
TESSERA_ELEMENT_TRAITS(std::uint8_t, unsigned_integer, 1, "uint8")
TESSERA_ELEMENT_TRAITS(std::uint16_t, unsigned_integer, 2, "uint16")
TESSERA_ELEMENT_TRAITS(std::uint32_t, unsigned_integer, 4, "uint32")
TESSERA_ELEMENT_TRAITS(std::uint64_t, unsigned_integer, 8, "uint64")
TESSERA_ELEMENT_TRAITS(float, floating_point, 4, "float32")
TESSERA_ELEMENT_TRAITS(double, floating_point, 8, "float64")
#undef TESSERA_ELEMENT_TRAITS

namespace detail {
template <class T, class = void>
struct has_element_traits : std::false_type {};
template <class T>
struct has_element_traits<T, std::void_t<decltype(ElementTraits<T>::kind)>> : std::true_type {};
}  // namespace detail

template <class T>
inline constexpr bool has_element_traits_v = detail::has_element_traits<T>::value;

// The integer and floating-point types (not bool or char): what HDF5 datasets hold.
template <class T>
inline constexpr bool is_numeric_element_v = [] {
  if constexpr (has_element_traits_v<T>) {
    return ElementTraits<T>::kind == ElementKind::signed_integer ||
           ElementTraits<T>::kind == ElementKind::unsigned_integer || ElementTraits<T>::kind == ElementKind::floating_point;
  } else {
    return false;
  }
}();

}  // namespace tessera
