// fill, iota and generate: element-wise writers, instances of the generic transform_index pass
// (device_transform.cuh: 16-byte stores). Element i's value depends only on i, so the result is
// bit-identical to the CPU backend (counter_value's float conversions are exact, so FMA contraction
// cannot change them).
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/device_transform.cuh"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda {
namespace detail {

template <std::size_t Bytes>
using UnsignedOfSize =
    std::conditional_t<Bytes == 1, std::uint8_t,
                       std::conditional_t<Bytes == 2, std::uint16_t, std::conditional_t<Bytes == 4, std::uint32_t, std::uint64_t>>>;

template <class T>
struct FillValue {
  T value;
  __device__ __forceinline__ T operator()(index_t) const { return value; }
};

template <class T>
struct IotaValue {
  T start;
  __device__ __forceinline__ T operator()(index_t i) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(start) + static_cast<U>(i));
    } else {
      return static_cast<T>(static_cast<double>(start) + static_cast<double>(i));
    }
  }
};

template <class T>
struct CounterValue {
  std::uint64_t seed;
  index_t global_offset;
  __device__ __forceinline__ T operator()(index_t i) const {
    return counter_value<T>(seed, static_cast<std::uint64_t>(global_offset + i));
  }
};

template <class T, class ValueOf>
void elementwise(T* out, index_t n, ValueOf value_of, StreamHandle stream) {
  device_transform_index(0, n, out, value_of, stream);
}

}  // namespace detail

// A fill writes bits: one instance per element size serves every type of that size. An integer iota
// wraps alike signed or unsigned: one instance per integer size.
template <class T>
void fill(const Queue& queue, T* out, index_t n, T value) {
  using Bits = detail::UnsignedOfSize<sizeof(T)>;
  detail::elementwise(reinterpret_cast<Bits*>(out), n, detail::FillValue<Bits>{std::bit_cast<Bits>(value)},
                      queue.stream);
}

template <class T>
void iota(const Queue& queue, T* out, index_t n, T start) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    detail::elementwise(reinterpret_cast<U*>(out), n, detail::IotaValue<U>{static_cast<U>(start)}, queue.stream);
  } else {
    detail::elementwise(out, n, detail::IotaValue<T>{start}, queue.stream);
  }
}

template <class T>
void generate(const Queue& queue, T* out, index_t n, std::uint64_t seed, index_t global_offset) {
  detail::elementwise(out, n, detail::CounterValue<T>{seed, global_offset}, queue.stream);
}

#define TESSERA_INSTANTIATE_GENERATE(T)                                     \
  template void fill<T>(const Queue&, T*, index_t, T);                      \
  template void iota<T>(const Queue&, T*, index_t, T);                      \
  template void generate<T>(const Queue&, T*, index_t, std::uint64_t, index_t);

TESSERA_INSTANTIATE_GENERATE(std::int8_t)
TESSERA_INSTANTIATE_GENERATE(std::int16_t)
TESSERA_INSTANTIATE_GENERATE(std::int32_t)
TESSERA_INSTANTIATE_GENERATE(std::int64_t)
TESSERA_INSTANTIATE_GENERATE(std::uint8_t)
TESSERA_INSTANTIATE_GENERATE(std::uint16_t)
TESSERA_INSTANTIATE_GENERATE(std::uint32_t)
TESSERA_INSTANTIATE_GENERATE(std::uint64_t)
TESSERA_INSTANTIATE_GENERATE(float)
TESSERA_INSTANTIATE_GENERATE(double)

}  // namespace tessera::kernels::cuda
