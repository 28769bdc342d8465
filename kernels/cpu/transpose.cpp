// CPU transpose: the tiled template (cpu/transpose.hpp) instantiated per element size, with the
// element as a run of bytes (so any alignment is fine), and a run-time size beyond 16 bytes.
#include <cstddef>
#include <utility>

#include "../src/transpose_backends.hpp"
#include "tessera/kernels/cpu/transpose.hpp"

namespace tessera::kernels::cpu {
namespace {

template <std::size_t Bytes>
struct Element {
  unsigned char bytes[Bytes];
};

template <std::size_t Bytes>
void transpose_sized(const void* in, index_t rows, index_t cols, index_t ld_in, void* out, index_t ld_out) {
  transpose(static_cast<const Element<Bytes>*>(in), rows, cols, ld_in, static_cast<Element<Bytes>*>(out), ld_out);
}

template <std::size_t... Sizes>
bool transpose_if_sized(std::index_sequence<Sizes...>, const void* in, index_t rows, index_t cols, index_t ld_in,
                        void* out, index_t ld_out, std::size_t element_bytes) {
  return ((element_bytes == Sizes + 1 ? (transpose_sized<Sizes + 1>(in, rows, cols, ld_in, out, ld_out), true) : false) ||
          ...);
}

}  // namespace

void transpose_bytes(const void* in, index_t rows, index_t cols, index_t ld_in, void* out, index_t ld_out,
                     std::size_t element_bytes) {
  if (!transpose_if_sized(std::make_index_sequence<16>{}, in, rows, cols, ld_in, out, ld_out, element_bytes))
    transpose_any_size(in, rows, cols, ld_in, out, ld_out, element_bytes);
}

}  // namespace tessera::kernels::cpu
