// CUDA transpose: the device passes of device_transpose.cuh, instantiated once per element size
// (1, 2, 4, 8, 16 bytes) for elements aligned to their size, and once per word size (1, 2, 4, 8
// bytes) for every other element: a size that is not a power of two, or an element placed off its
// size's alignment (a 16-byte struct of doubles at an 8-byte boundary). Elements of 256 bytes and
// more take a warp each, in words of up to 16 bytes (device_transpose_words).
#include <cstddef>
#include <cstdint>

#include "../src/transpose_backends.hpp"
#include "tessera/kernels/cuda/device_transpose.cuh"

namespace tessera::kernels::cuda {
namespace {

// The largest power of two, at most `limit`, that divides every one of `values`.
template <class... V>
std::size_t common_alignment(std::size_t limit, V... values) {
  std::size_t a = limit;
  while (a > 1 && !(((values % a) == 0) && ...)) a /= 2;
  return a;
}

template <int Bytes>
void transpose_sized(const void* in, index_t rows, index_t cols, index_t ld_in, void* out, index_t ld_out,
                     StreamHandle stream) {
  using E = detail::word_t<Bytes>;
  detail::device_transpose<detail::TransposeTuning<Bytes>>(static_cast<const E*>(in), rows, cols, ld_in,
                                                           static_cast<E*>(out), ld_out, stream);
}

template <int WordBytes>
void transpose_words(const void* in, index_t rows, index_t cols, index_t ld_in, void* out, index_t ld_out,
                     std::size_t element_bytes, StreamHandle stream) {
  using W = detail::word_t<WordBytes>;
  detail::device_transpose_words(static_cast<const W*>(in), rows, cols, ld_in, static_cast<W*>(out), ld_out,
                                 static_cast<int>(element_bytes / WordBytes), stream);
}

}  // namespace

void transpose_bytes(const Queue& queue, const void* in, index_t rows, index_t cols, index_t ld_in, void* out,
                     index_t ld_out, std::size_t element_bytes) {
  const StreamHandle stream = queue.stream;
  const auto in_address = reinterpret_cast<std::uintptr_t>(in), out_address = reinterpret_cast<std::uintptr_t>(out);
  const std::size_t natural = common_alignment(16, element_bytes, in_address, out_address);
  if (natural == element_bytes) {
    switch (element_bytes) {
      case 1: transpose_sized<1>(in, rows, cols, ld_in, out, ld_out, stream); return;
      case 2: transpose_sized<2>(in, rows, cols, ld_in, out, ld_out, stream); return;
      case 4: transpose_sized<4>(in, rows, cols, ld_in, out, ld_out, stream); return;
      case 8: transpose_sized<8>(in, rows, cols, ld_in, out, ld_out, stream); return;
      case 16: transpose_sized<16>(in, rows, cols, ld_in, out, ld_out, stream); return;
      default: break;
    }
  }
  // Words of up to 8 bytes; large elements (a warp each) in words of up to 16.
  const std::size_t widest = element_bytes >= detail::TransposeWordsTuning::kLargeBytes ? 16 : 8;
  switch (common_alignment(widest, element_bytes, in_address, out_address)) {
    case 16: transpose_words<16>(in, rows, cols, ld_in, out, ld_out, element_bytes, stream); return;
    case 8: transpose_words<8>(in, rows, cols, ld_in, out, ld_out, element_bytes, stream); return;
    case 4: transpose_words<4>(in, rows, cols, ld_in, out, ld_out, element_bytes, stream); return;
    case 2: transpose_words<2>(in, rows, cols, ld_in, out, ld_out, element_bytes, stream); return;
    default: transpose_words<1>(in, rows, cols, ld_in, out, ld_out, element_bytes, stream); return;
  }
}

}  // namespace tessera::kernels::cuda
