// Correctly rounded arithmetic that the compiler may not fuse into multiply-adds: what code needs
// that must give the bits of another program's plain operations (numpy's, which round after each
// one) on the host and the device alike. nvcc contracts a * b + c into one fma by default, and GCC
// does outside ISO C++ modes; these keep each operation rounded on its own.
#pragma once

#include <type_traits>

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::detail {

// On the device the intrinsics; on the host plain operators (this project compiles ISO C++, where
// GCC and Clang do not contract across statements; the asm keeps a product from being contracted
// into a following addition even under -ffp-contract=fast).
template <class B>
TESSERA_HOST_DEVICE_INLINE B mul_rn(B a, B b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<B, float>) return __fmul_rn(a, b);
  else return __dmul_rn(a, b);
#else
  B p = a * b;
#if defined(__GNUC__) && defined(__x86_64__)
  asm("" : "+x"(p));
#elif defined(__GNUC__) && defined(__aarch64__)
  asm("" : "+w"(p));
#endif
  return p;
#endif
}

template <class B>
TESSERA_HOST_DEVICE_INLINE B add_rn(B a, B b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<B, float>) return __fadd_rn(a, b);
  else return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

template <class B>
TESSERA_HOST_DEVICE_INLINE B sub_rn(B a, B b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<B, float>) return __fsub_rn(a, b);
  else return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

template <class B>
TESSERA_HOST_DEVICE_INLINE B div_rn(B a, B b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<B, float>) return __fdiv_rn(a, b);
  else return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace tessera::kernels::detail
