// kernels::transpose_bytes: checks the shape, then hands the work to the backend named by the queue.
#include "backend_dispatch.hpp"
#include "transpose_backends.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/transpose.hpp"

namespace tessera::kernels {

void transpose_bytes(const Queue& q, const void* in, index_t rows, index_t cols, index_t ld_in, void* out,
                     index_t ld_out, std::size_t element_bytes) {
  TESSERA_ASSERT(rows >= 0 && cols >= 0, "transpose: negative dimension");
  TESSERA_ASSERT(ld_in >= cols && ld_out >= rows, "transpose: leading dimension smaller than the row length");
  TESSERA_ASSERT(element_bytes >= 1, "transpose: elements of zero bytes");
  if (rows == 0 || cols == 0) return;
  TESSERA_DISPATCH(q, cpu::transpose_bytes(in, rows, cols, ld_in, out, ld_out, element_bytes),
                   cuda::transpose_bytes(q, in, rows, cols, ld_in, out, ld_out, element_bytes));
}

}  // namespace tessera::kernels
