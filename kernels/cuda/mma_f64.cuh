// FP64 tensor-core products (DMMA). They compute IEEE double products and sums (no reduced
// precision inputs), so they serve the double GEMM by default.
//
// One 16x8x4 step: A fragment a[2] (rows lane/4 and lane/4 + 8, column lane%4), B fragment b
// (row lane%4, column lane/4), accumulators c[4] (row lane/4 + 8*(r/2), column 2*(lane%4) + r%2).
// sm_90 has the m16n8k4 shape; sm_80 issues the same step as two m8n8k4, whose fragments are the
// upper and lower halves of the m16n8k4 ones.
#pragma once

namespace tessera::kernels::cuda::detail {

__device__ __forceinline__ void mma_16x8x4_f64(double (&c)[4], double a0, double a1, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
      : "d"(a0), "d"(a1), "d"(b));
#else
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
               : "+d"(c[0]), "+d"(c[1])
               : "d"(a0), "d"(b));
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
               : "+d"(c[2]), "+d"(c[3])
               : "d"(a1), "d"(b));
#endif
}

}  // namespace tessera::kernels::cuda::detail
