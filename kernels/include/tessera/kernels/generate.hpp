// Filling a block: constants, index sequences and the counter-based generator. Precompiled for
// int8, int16, int32, int64, uint8, uint16, uint32, uint64, float and double (fill of any other
// trivially copyable type: fill_any in transform.hpp).
#pragma once

#include <cstdint>

#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

// out[i] = value for i in [0, n).
template <class T>
void fill(const Queue& queue, T* out, index_t n, T value);

// out[i] = start + T(i)  (integers wrap like sums; floats as T(start + i) computed in double).
template <class T>
void iota(const Queue& queue, T* out, index_t n, T start);

// out[i] = counter_value<T>(seed, global_offset + i): element `global_offset + i` of the global
// sequence, whatever the partition.
template <class T>
void generate(const Queue& queue, T* out, index_t n, std::uint64_t seed, index_t global_offset);

}  // namespace tessera::kernels
