#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu_backend.hpp"
#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/counter_rng.hpp"

namespace tessera::kernels::cpu {

template <class T>
void fill(T* out, index_t n, T value) {
#pragma omp parallel for schedule(static) if (n >= kSerialCutoff)
  for (index_t i = 0; i < n; ++i) out[i] = value;
}

template <class T>
void iota(T* out, index_t n, T start) {
#pragma omp parallel for schedule(static) if (n >= kSerialCutoff)
  for (index_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      out[i] = static_cast<T>(static_cast<U>(start) + static_cast<U>(i));
    } else {
      out[i] = static_cast<T>(static_cast<double>(start) + static_cast<double>(i));
    }
  }
}

template <class T>
void generate(T* out, index_t n, std::uint64_t seed, index_t global_offset) {
#pragma omp parallel for schedule(static) if (n >= kSerialCutoff)
  for (index_t i = 0; i < n; ++i) out[i] = counter_value<T>(seed, static_cast<std::uint64_t>(global_offset + i));
}

#define TESSERA_CPU_GENERATE(T)                                        \
  template void fill<T>(T*, index_t, T);                               \
  template void iota<T>(T*, index_t, T);                               \
  template void generate<T>(T*, index_t, std::uint64_t, index_t);

TESSERA_CPU_GENERATE(std::int8_t)
TESSERA_CPU_GENERATE(std::int16_t)
TESSERA_CPU_GENERATE(std::int32_t)
TESSERA_CPU_GENERATE(std::int64_t)
TESSERA_CPU_GENERATE(std::uint8_t)
TESSERA_CPU_GENERATE(std::uint16_t)
TESSERA_CPU_GENERATE(std::uint32_t)
TESSERA_CPU_GENERATE(std::uint64_t)
TESSERA_CPU_GENERATE(float)
TESSERA_CPU_GENERATE(double)

}  // namespace tessera::kernels::cpu
