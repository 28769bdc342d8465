// CPU exact sum: each thread deposits its contiguous chunk into its own superaccumulator (a carry
// pass every kExactSumDepositsPerNormalize elements keeps the limbs in range), then the thread
// accumulators merge exactly. The order of the merge cannot change the result: integer sums.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../src/exact_sum_backends.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {
namespace {

__extension__ using Int128 = __int128;  // GCC and Clang; __extension__ keeps -Wpedantic quiet
__extension__ using UInt128 = unsigned __int128;

// The same two levels as the CUDA kernel (kernels/cuda/exact_sum.cu): a 128-bit fixed-point window
// in registers takes the elements whose significand lands inside it, with one shift and one add and
// no loop-carried dependence through memory; elements below the window go to the limbs directly,
// and an element above it empties the window into the limbs and moves the window up.
template <class T>
void deposit_range(const T* in, index_t n, ExactAccumulator<T>& acc) {
  for (index_t begin = 0; begin < n; begin += kExactSumDepositsPerNormalize) {
    const index_t end = std::min(n, begin + kExactSumDepositsPerNormalize);
    // Headroom for this many terms: the window cannot overflow however the data fall.
    int headroom = 1;
    while ((index_t(1) << (headroom - 1)) <= end - begin && headroom < 62) ++headroom;
    const int window_bits = 127 - ExactSumFormat<T>::kPrecision - headroom;
    Int128 window = 0;
    int base = -1;
    auto flush = [&] {
      if (window == 0) return;
      const auto bits = static_cast<UInt128>(window);
      for (int j = 0; j < 3; ++j) {
        const auto piece = static_cast<std::uint64_t>(bits >> (32 * j)) & 0xffffffffu;
        if (piece) exact_sum_deposit<T>(acc.limb, piece, base + 32 * j, false);
      }
      const auto top = static_cast<std::int64_t>(window >> 96);
      if (top) exact_sum_deposit<T>(acc.limb, static_cast<std::uint64_t>(top < 0 ? -top : top), base + 96, top < 0);
      window = 0;
    };
    std::int64_t non_neg_zero = 0;
    for (index_t i = begin; i < end; ++i) {
      const ExactSumElement e = exact_sum_decompose(in[i]);
      non_neg_zero += e.is_negative_zero ? 0 : 1;
      if (e.special) {
        if (e.nan) ++acc.nan_count;
        else if (e.negative) ++acc.neg_inf_count;
        else ++acc.pos_inf_count;
        continue;
      }
      if (e.magnitude == 0) continue;
      int shift = e.position - base;
      if (base < 0 || shift > window_bits) {
        flush();
        base = std::max(0, e.position - (window_bits - window_bits / 4));
        shift = e.position - base;
      }
      if (shift < 0) {
        exact_sum_deposit<T>(acc.limb, e.magnitude, e.position, e.negative);
        continue;
      }
      const Int128 term = static_cast<Int128>(e.magnitude) << shift;
      window += e.negative ? -term : term;
    }
    flush();
    acc.count += end - begin;
    acc.non_neg_zero_count += non_neg_zero;
    exact_sum_normalize(acc);
  }
}

}  // namespace

template <class T>
void exact_sum_partial(const T* in, index_t n, ExactAccumulator<T>* acc_out) {
  const int threads = threads_for(n);
  std::vector<ExactAccumulator<T>> partial(static_cast<std::size_t>(threads));
  for (auto& p : partial) exact_sum_clear(p);
  if (threads == 1) {
    deposit_range(in, n, partial[0]);
  } else {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      const Chunk c = chunk_of(n, t, omp_get_num_threads());
      deposit_range(in + c.begin, c.end - c.begin, partial[static_cast<std::size_t>(t)]);
    }
  }
  ExactAccumulator<T> total = partial[0];
  for (std::size_t t = 1; t < partial.size(); ++t) exact_sum_merge(total, partial[t]);
  exact_sum_normalize(total);
  *acc_out = total;
}

template void exact_sum_partial<float>(const float*, index_t, ExactAccumulator<float>*);
template void exact_sum_partial<double>(const double*, index_t, ExactAccumulator<double>*);

}  // namespace tessera::kernels::cpu
