// The operations of the Python package that instantiate the framework's templates with functors of
// their own (a widening sum, a product, a cast, a mask program). Their translation units are
// compiled by nvcc where the build has CUDA, so that the functors also run in the device kernels,
// and by the C++ compiler otherwise; the binding code, which includes pybind11, only calls them.
// Each is instantiated for every type of dtypes.hpp (min, max and the masks for the ordered ones);
// complex types compute in functors.hpp's Complex<F>, viewing the same memory. Collective where the
// algorithm it calls is.
#pragma once

#include <cstdint>
#include <vector>

#include "dtypes.hpp"
#include "mask.hpp"
#include "tessera/framework/dist_array.hpp"

namespace tessera::python::ops {

// NumPy's sum and prod: integers accumulate in int64 (wrapping modulo 2^64), floats and complex
// numbers in their own type. The sum of no elements is 0, the product 1.
template <class T>
Accumulator<T> sum(const DistArray<T>& a);
template <class T>
Accumulator<T> prod(const DistArray<T>& a);
// The correctly rounded sum of floats (tessera::reproducible_sum; for complex numbers of the real
// and the imaginary parts apart); for integers the exact int64 sum (the same as sum, wrapping only
// beyond 2^63).
template <class T>
Accumulator<T> exact_sum(const DistArray<T>& a);
// numpy.mean's sum of integers: the elements converted to float64 and added in float64 (no
// wrapping). Integer types only.
template <class T>
double float64_sum(const DistArray<T>& a);
// The smallest and largest element (a NaN wins, as in numpy). The array must not be empty. Ordered
// types only.
template <class T>
T min(const DistArray<T>& a);
template <class T>
T max(const DistArray<T>& a);

// Running sums and products in numpy's accumulator type (int64 for integers): inclusive
// (numpy.cumsum) or exclusive (out[0] = 0, or 1 for the product). The input's partition.
template <class T>
DistArray<Accumulator<T>> cumsum(const DistArray<T>& a, bool exclusive);
template <class T>
DistArray<Accumulator<T>> cumprod(const DistArray<T>& a, bool exclusive);

// out = numpy's astype of a (C++ conversion; a float outside the integer's range, or NaN, becomes
// the integer's smallest value, as numpy gives on x86; a number to complex has imaginary part 0;
// complex to a real type is a UsageError: the binding refuses it first). Local; same context and partition (the
// output may view a matrix's block: DistArray::view_local).
template <class To, class From>
void astype(const DistArray<From>& a, DistArray<To>& out);

// Element-wise arithmetic into `out` (same context and partition as the inputs: UsageError
// otherwise). Integers wrap modulo 2^bits (numpy's behaviour); divide is for floats and complex
// numbers; complex numbers take neither minimum, maximum nor absolute (UsageError). Local.
enum class Binary { add, subtract, multiply, divide, minimum, maximum };
enum class Unary { negative, absolute };
// out[i] = a[i] op b[i].
template <class T>
void binary(const DistArray<T>& a, const DistArray<T>& b, DistArray<T>& out, Binary op);
// out[i] = a[i] op s, or s op a[i] where scalar_first.
template <class T>
void binary_scalar(const DistArray<T>& a, T s, DistArray<T>& out, Binary op, bool scalar_first);
template <class T>
void unary(const DistArray<T>& a, DistArray<T>& out, Unary op);

// Fills `out` with numpy.arange(start, ..., step), as numpy computes it: floats from first =
// T(start) and second = T(start + step) (functors.hpp), integers start + i * step in wrapping int64
// arithmetic. Local (no collective). Not for complex types (UsageError).
template <class T>
void arange(DistArray<T>& out, T first, T second, std::int64_t first_integer, std::int64_t step_integer);

// The elements for which the mask program holds, in order (a ragged partition: each rank keeps its
// own), and how many there are.
template <class T>
DistArray<T> compress(const DistArray<T>& a, const std::vector<MaskStep>& mask);
// numpy.sort and numpy.argsort(kind="stable"): every NaN last, -0 equal to +0 (ordered types).
template <class T>
DistArray<T> numpy_sort(const DistArray<T>& a);
template <class T>
DistArray<std::int64_t> numpy_argsort(const DistArray<T>& a);
template <class T>
index_t count(const DistArray<T>& a, const std::vector<MaskStep>& mask);

// Throws UsageError for a program longer than MaskProgram's steps or that leaves no single value.
template <class T>
MaskProgram<T> make_mask_program(const std::vector<MaskStep>& steps);

}  // namespace tessera::python::ops
