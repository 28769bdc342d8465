// The element types the Python package binds, written once. Everything per type (the array
// variants, the NumPy and DLPack type codes, the operations compiled for each, the dispatch from a
// run-time dtype) derives from the two lists below: a new element type is one line in each, plus
// its DtypeInfo, and the operations that do not apply to it (an order for a sort, say) say so
// through the traits at the end of this file.
#pragma once

#include <complex>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tessera::python {

// The list, as a macro for explicit instantiation in the operations' translation units (and the
// same with a first argument, for the pairs of types: conversions) ...
#define TESSERA_PYTHON_FOR_EACH_DTYPE(X) \
  X(std::int32_t) X(std::int64_t) X(float) X(double) X(std::complex<float>) X(std::complex<double>)
#define TESSERA_PYTHON_FOR_EACH_DTYPE_WITH(X, A)                                                   \
  X(A, std::int32_t) X(A, std::int64_t) X(A, float) X(A, double) X(A, std::complex<float>)          \
  X(A, std::complex<double>)
// The ordered types among them (comparisons, masks, min, max, sorting, histograms): the
// operations that instantiate only these list them here.
#define TESSERA_PYTHON_FOR_EACH_ORDERED_DTYPE(X) X(std::int32_t) X(std::int64_t) X(float) X(double)

template <class... Ts>
struct TypeList {
  static constexpr std::size_t size = sizeof...(Ts);
};

// ... and as a type list, in the same order, for dispatch and variants.
using Dtypes = TypeList<std::int32_t, std::int64_t, float, double, std::complex<float>, std::complex<double>>;

namespace detail {
#define TESSERA_PYTHON_COUNT_DTYPE(T) +1
#define TESSERA_PYTHON_COUNT_DTYPE_WITH(A, T) +1
inline constexpr std::size_t kMacroDtypes = 0 TESSERA_PYTHON_FOR_EACH_DTYPE(TESSERA_PYTHON_COUNT_DTYPE);
inline constexpr std::size_t kMacroDtypesWith = 0 TESSERA_PYTHON_FOR_EACH_DTYPE_WITH(TESSERA_PYTHON_COUNT_DTYPE_WITH, 0);
inline constexpr std::size_t kMacroOrdered = 0 TESSERA_PYTHON_FOR_EACH_ORDERED_DTYPE(TESSERA_PYTHON_COUNT_DTYPE);
#undef TESSERA_PYTHON_COUNT_DTYPE
#undef TESSERA_PYTHON_COUNT_DTYPE_WITH
static_assert(kMacroDtypes == Dtypes::size && kMacroDtypesWith == Dtypes::size,
              "TESSERA_PYTHON_FOR_EACH_DTYPE(_WITH) and Dtypes must list the same types");
}  // namespace detail

// DLPack's type codes (dlpack.h: kDLInt, kDLUInt, kDLFloat, ..., kDLComplex).
enum class DlpackCode : std::uint8_t { int_ = 0, uint = 1, float_ = 2, complex = 5, bool_ = 6 };

// Per type: its NumPy name, the array interface's kind letter, and its DLPack code.
template <class T>
struct DtypeInfo;
template <>
struct DtypeInfo<std::int32_t> {
  static constexpr const char* name = "int32";
  static constexpr char kind = 'i';
  static constexpr DlpackCode dlpack = DlpackCode::int_;
};
template <>
struct DtypeInfo<std::int64_t> {
  static constexpr const char* name = "int64";
  static constexpr char kind = 'i';
  static constexpr DlpackCode dlpack = DlpackCode::int_;
};
template <>
struct DtypeInfo<float> {
  static constexpr const char* name = "float32";
  static constexpr char kind = 'f';
  static constexpr DlpackCode dlpack = DlpackCode::float_;
};
template <>
struct DtypeInfo<double> {
  static constexpr const char* name = "float64";
  static constexpr char kind = 'f';
  static constexpr DlpackCode dlpack = DlpackCode::float_;
};

template <>
struct DtypeInfo<std::complex<float>> {
  static constexpr const char* name = "complex64";
  static constexpr char kind = 'c';
  static constexpr DlpackCode dlpack = DlpackCode::complex;
};
template <>
struct DtypeInfo<std::complex<double>> {
  static constexpr const char* name = "complex128";
  static constexpr char kind = 'c';
  static constexpr DlpackCode dlpack = DlpackCode::complex;
};

// A run-time element type: the position of its type in Dtypes.
struct Dtype {
  int index = 0;
  bool operator==(const Dtype&) const = default;
};

namespace detail {
template <class T, class... Ts>
constexpr int index_in(TypeList<Ts...>) {
  int i = 0, found = -1;
  ((std::is_same_v<T, Ts> ? (found = i, ++i) : ++i), ...);
  return found;
}
template <class F, class... Ts>
decltype(auto) dispatch_in(int index, F&& f, TypeList<Ts...>) {
  using Result = decltype(f.template operator()<std::tuple_element_t<0, std::tuple<Ts...>>>());
  if constexpr (std::is_void_v<Result>) {
    int i = 0;
    ((i++ == index ? (f.template operator()<Ts>(), 0) : 0), ...);
  } else {
    Result result{};
    int i = 0;
    ((i++ == index ? (result = f.template operator()<Ts>(), 0) : 0), ...);
    return result;
  }
}
template <class F, class... Ts>
void for_each_in(F&& f, TypeList<Ts...>) {
  (f.template operator()<Ts>(), ...);
}
template <template <class> class Wrap, class... Ts>
auto wrap_in(TypeList<Ts...>) -> std::tuple<Wrap<Ts>...>;
}  // namespace detail

template <class T>
constexpr Dtype dtype_of() {
  constexpr int index = detail::index_in<T>(Dtypes{});
  static_assert(index >= 0, "dtype_of: not one of the Python package's element types");
  return Dtype{index};
}

// Calls f.template operator()<T>() with T the type of `dtype`; returns what it returns (which must
// be default constructible where it is not void).
template <class F>
decltype(auto) dispatch(Dtype dtype, F&& f) {
  return detail::dispatch_in(dtype.index, std::forward<F>(f), Dtypes{});
}

// Calls f.template operator()<T>() for every type of the list, in order.
template <class F>
void for_each_dtype(F&& f) {
  detail::for_each_in(std::forward<F>(f), Dtypes{});
}

const char* dtype_name(Dtype dtype);
std::size_t dtype_bytes(Dtype dtype);

// What each type supports beyond storage, arithmetic and reductions by sum and product.
template <class T>
struct is_complex : std::false_type {};
template <class F>
struct is_complex<std::complex<F>> : std::true_type {
  using real_type = F;
};
template <class T>
inline constexpr bool is_complex_v = is_complex<T>::value;
template <class T>
inline constexpr bool is_ordered_v = std::is_arithmetic_v<T>;  // min, max, sort, histogram, comparisons
template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T>;  // the correctly rounded sum, stencils
template <class T>
inline constexpr bool is_integer_v = std::is_integral_v<T>;  // bincount
template <class T>
inline constexpr bool has_matmul_v = std::is_arithmetic_v<T> || is_complex_v<T>;  // tessera::matmul's instances

// The real type of a complex type, the type itself otherwise.
template <class T>
struct real_of {
  using type = T;
};
template <class F>
struct real_of<std::complex<F>> {
  using type = F;
};
template <class T>
using real_t = typename real_of<T>::type;

// NumPy's accumulator for sum, prod, cumsum and cumprod: the 64-bit integer for integers (numpy
// widens int32 to the platform's long), the type itself otherwise.
template <class T>
using Accumulator = std::conditional_t<std::is_integral_v<T>, std::int64_t, T>;

}  // namespace tessera::python
