// FP64 tensor-core products (DMMA). They compute IEEE double products and sums (no reduced
// precision inputs), so they serve the double GEMM by default.
//
// One step is a 16x8 tile of the MMA's C over 8 k. Lane (g = lane/4, t = lane%4) of a warp holds
//   a[2*e + h] = A[g + 8*h][slot (t, e)]   (h, e = 0..1: rows g and g + 8, two k slots)
//   b[e]       = B[slot (t, e)][g]
//   c[r]       at row g + 8*(r/2), column 2*t + r%2.
// PTX numbers slot (t, e) as k = t + 4*e. A product sums over k, so any numbering that A and B
// share gives the same result; the GEMM maps slot (t, e) to a physical k of its choice (two
// adjacent ones per lane, which makes each operand pair one 16-byte shared-memory load).
//
// The asm statements are not volatile: they only read and write their operands, and leaving the
// compiler free to move them lets it interleave independent products with the fragment loads.
#pragma once

namespace tessera::kernels::cuda::detail {

// One 16x8x4 step: A fragment a0/a1 (rows g, g+8, slot t), B fragment b (slot t, column g).
// sm_90 has the m16n8k4 shape; sm_80 issues the same step as two m8n8k4, whose fragments are the
// upper and lower halves of the m16n8k4 ones.
__device__ __forceinline__ void mma_16x8x4_f64(double (&c)[4], double a0, double a1, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
      : "d"(a0), "d"(a1), "d"(b));
#else
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(c[0]), "+d"(c[1])
      : "d"(a0), "d"(b));
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(c[2]), "+d"(c[3])
      : "d"(a1), "d"(b));
#endif
}

// One 16x8x8 step on the fragments described above: one m16n8k8 on sm_90, two 16x8x4 steps
// (slot e = 0, then 1) on sm_80.
__device__ __forceinline__ void mma_16x8x8_f64(double (&c)[4], const double (&a)[4], const double (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
#pragma unroll
  for (int e = 0; e < 2; ++e) mma_16x8x4_f64(c, a[2 * e], a[2 * e + 1], b[e]);
#endif
}

}  // namespace tessera::kernels::cuda::detail
