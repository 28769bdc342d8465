// FP64 tensor-core products (DMMA). They compute IEEE double products and sums (no reduced
// precision inputs), so they serve the double GEMM by default.
//
// The GEMM works in steps of 16 along k. Lane (g = lane/4, t = lane%4) of a warp holds, for one
// 16x8 tile of C:
//   a[2*j + h] = A[g + 8*h][4*t + j]   (j = 0..3, h = 0..1: two rows, four adjacent k)
//   b[j]       = B[4*t + j][g]
//   c[r]       at row g + 8*(r/2), column 2*t + r%2.
// Adjacent k per lane is what lets the A fragment come from shared memory as two 16-byte loads
// per row. The PTX shapes number k differently (slot i of m16n8k16 is column t + 4*(i/2) of A and
// row t + 4*i of B), but a product sums over k, so any numbering that A and B share gives the same
// result: slot j of both operands is fed from physical column/row 4*t + j.
#pragma once

namespace tessera::kernels::cuda::detail {

// One 16x8x4 step: A fragment a0/a1 (rows g, g+8, column t), B fragment b (row t, column g).
// sm_90 has the m16n8k4 shape; sm_80 issues the same step as two m8n8k4, whose fragments are the
// upper and lower halves of the m16n8k4 ones.
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

// One 16x8x16 step on the fragments described above as four m16n8k4 (slot j of both operands).
__device__ __forceinline__ void mma_16x8x16_f64_by_k4(double (&c)[4], const double (&a)[8], const double (&b)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) mma_16x8x4_f64(c, a[2 * j], a[2 * j + 1], b[j]);
}

// One 16x8x16 step on the fragments described above. Shape 16 issues one m16n8k16 (sm_90), 8 two
// m16n8k8 (sm_90), 4 four m16n8k4; sm_80, which has only the k4 step, always takes the last.
template <int Shape = 8>
__device__ __forceinline__ void mma_16x8x16_f64(double (&c)[4], const double (&a)[8], const double (&b)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Shape == 16) {
    // Slot i of A is (row g + 8*(i%2), k slot i/2), slot i of B is k slot i: a[] and b[] as stored.
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
        : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]),
          "d"(b[1]), "d"(b[2]), "d"(b[3]));
  } else if constexpr (Shape == 8) {
    // Instruction q takes k slots 2q and 2q+1: A slots (row g + 8*(i%2), k slot 2q + i/2) are
    // a[4q .. 4q+3], B slots b[2q], b[2q+1].
#pragma unroll
    for (int q = 0; q < 2; ++q)
      asm volatile(
          "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};\n"
          : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
          : "d"(a[4 * q]), "d"(a[4 * q + 1]), "d"(a[4 * q + 2]), "d"(a[4 * q + 3]), "d"(b[2 * q]), "d"(b[2 * q + 1]));
  } else {
    mma_16x8x16_f64_by_k4(c, a, b);
  }
#else
  mma_16x8x16_f64_by_k4(c, a, b);
#endif
}

}  // namespace tessera::kernels::cuda::detail
