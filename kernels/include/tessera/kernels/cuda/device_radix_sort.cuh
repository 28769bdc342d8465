// Device-wide radix sort (Onesweep) and the search of sorted keys: kernels, tuning and launch logic
// (the layer of cub/device/dispatch/dispatch_radix_sort.cuh). Contract in tessera/kernels/sort.hpp;
// the per-thread-block work in agent_radix_sort.cuh.
//
// One sort, in stream order:
//   1. one memset of the control words (digit counts, tile counters), one histogram kernel: the
//      digit counts of every place, scanned into starting positions by its last thread block;
//   2. per place, per portion of < 2^30 keys: a memset of the look-back words and one onesweep
//      kernel (one thread block per tile), from one key buffer into the other.
// The key buffers alternate between keys_out and a spare array so that the last place lands in
// keys_out and keys_in is only read (an in-place sort with an odd number of places copies once at
// the end). Keys are converted to radix bits when the first place reads them and back when the
// last place writes them; the places between move radix bits. Pairs of 4 + 4, 8 + 8 and 4 + 8 bytes
// over two or more places are sorted as packed words (device_radix_sort_packed).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/agent_radix_sort.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/tuning/radix_sort.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::kernels::cuda::detail {

template <class Tuning, class Bits>
__global__ void __launch_bounds__(Tuning::kHistogramThreads)
    radix_histogram_kernel(const Bits* keys, index_t n, RadixTwiddle<Bits> twiddle, int begin_bit, int end_bit,
                           index_t* digit_starts, unsigned* blocks_done) {
  __shared__ RadixHistogramStorage<Tuning, Bits> storage;
  radix_histogram_agent<Tuning>(storage, keys, n, twiddle, begin_bit, end_bit, digit_starts, blocks_done);
}

// Dynamic shared memory of a onesweep block: the storage where Tuning::kDynamicStorage (rounded up
// to 16 bytes), then the stage of values (Tuning::kStageBytes).
template <class Tuning, class Bits, class Word>
inline constexpr int kOnesweepStorageBytes =
    Tuning::kDynamicStorage ? static_cast<int>((sizeof(OnesweepStorage<Tuning, Bits, Word>) + 15) / 16 * 16) : 0;
template <class Tuning, class Bits, class Word>
inline constexpr int kOnesweepDynamicBytes = kOnesweepStorageBytes<Tuning, Bits, Word> + Tuning::kStageBytes;

template <class Tuning, class Bits, class Word, int Split = 0>
__global__ void __launch_bounds__(Tuning::kBlockThreads, Tuning::kMinBlocksPerSm) onesweep_kernel(const OnesweepPass<Bits, Word> pass) {
  extern __shared__ __align__(16) unsigned char onesweep_dynamic[];  // kOnesweepDynamicBytes
  Word* const stage = reinterpret_cast<Word*>(onesweep_dynamic + kOnesweepStorageBytes<Tuning, Bits, Word>);
  if constexpr (Tuning::kDynamicStorage) {
    onesweep_agent<Tuning, Bits, Word, Split>(*reinterpret_cast<OnesweepStorage<Tuning, Bits, Word>*>(onesweep_dynamic),
                                              stage, pass);
  } else {
    __shared__ OnesweepStorage<Tuning, Bits, Word> storage;
    onesweep_agent<Tuning, Bits, Word, Split>(storage, stage, pass);
  }
}

// The onesweep kernel's dynamic shared memory (the staged values, and the storage where dynamic)
// and its carveout: the smallest that keeps Tuning::kMinBlocksPerSm blocks resident
// (Tuning::kFitCarveout), else the largest where there is dynamic memory and the driver's choice
// where there is none. Set before every sort, as histogram_opt_in does: the same kernel instance
// may live in more than one loaded module, and the attributes belong to the one the call reaches.
template <class Tuning, class Bits, class Word, int Split = 0>
void configure_onesweep_kernel() {
  constexpr auto kernel = onesweep_kernel<Tuning, Bits, Word, Split>;
  constexpr int kDynamicBytes = kOnesweepDynamicBytes<Tuning, Bits, Word>;
  constexpr std::size_t kBlockBytes =
      kDynamicBytes + (Tuning::kDynamicStorage ? 0 : sizeof(OnesweepStorage<Tuning, Bits, Word>));
  if constexpr (kDynamicBytes > 0)
    TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kDynamicBytes));
  if constexpr (Tuning::kFitCarveout) {
    TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                            fitted_carveout_percent(current_device_info(), kBlockBytes, Tuning::kMinBlocksPerSm)));
  } else if constexpr (kDynamicBytes > 0) {
    TESSERA_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  }
}

template <class Bits>
__global__ void sorted_search_kernel(RadixTwiddle<Bits> twiddle, const Bits* sorted, index_t n, const Bits* needles,
                                     index_t m, bool upper, index_t* positions) {
  const index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= m) return;
  const Bits needle = twiddle.to_radix(needles[j]);
  index_t low = 0, high = n;
  while (low < high) {
    const index_t mid = low + (high - low) / 2;
    const Bits probe = twiddle.to_radix(sorted[mid]);
    if (upper ? !(needle < probe) : probe < needle) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  positions[j] = low;
}

template <class Bits>
void device_sorted_search(const Queue& queue, RadixTwiddle<Bits> twiddle, const Bits* sorted, index_t n,
                          const Bits* needles, index_t m, bool upper, index_t* positions) {
  if (m == 0) return;
  constexpr int kThreads = SortedSearchTuning::kThreads;
  const index_t blocks = ceil_div<index_t>(m, kThreads);
  TESSERA_ASSERT(blocks <= 0x7fffffff, "sorted search: more needles than one grid can hold");
  sorted_search_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, to_cuda(queue.stream)>>>(twiddle, sorted, n,
                                                                                                needles, m, upper, positions);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// The digit counts of every place of keys[0, n) (bits [begin_bit, end_bit)), scanned into each
// place's starting positions: digit_starts[place][digit] (zero before), blocks_done (zero before).
template <class Bits>
void launch_radix_histogram(cudaStream_t stream, RadixTwiddle<Bits> twiddle, const Bits* keys, index_t n, int begin_bit,
                            int end_bit, index_t* digit_starts, unsigned* blocks_done) {
  using HistogramTuning = RadixHistogramTuning<Bits>;
  constexpr int kThreads = HistogramTuning::kHistogramThreads;
  const DeviceInfo& device = current_device_info();
  const int per_sm = blocks_per_sm<radix_histogram_kernel<HistogramTuning, Bits>>(kThreads);
  const index_t tiles = ceil_div<index_t>(n, index_t(kThreads) * HistogramTuning::kHistogramItems);
  // A block's shared counts stay below 2^32: at most 2^31 keys per block.
  const index_t min_blocks = ceil_div<index_t>(n, index_t(1) << 31);
  const index_t blocks = std::max(min_blocks, std::min<index_t>(tiles, index_t(per_sm) * device.sm_count));
  radix_histogram_kernel<HistogramTuning, Bits><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      keys, n, twiddle, begin_bit, end_bit, digit_starts, blocks_done);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// The control words (digit starts per portion and place, tile counters), the look-back words and
// the launches of one sort's places and portions. The control and look-back words lie at the front
// of the sort's scratch (bytes()); start() zeroes the control words and counts the digits.
template <class Tuning>
struct OnesweepSchedule {
  static std::size_t align(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

  index_t n;
  int begin_bit;
  int end_bit;
  int places = (end_bit - begin_bit + kRadixDigitBits - 1) / kRadixDigitBits;
  index_t portions = ceil_div<index_t>(n, Tuning::kPortionItems);
  index_t portion_tiles = ceil_div<index_t>(std::min<index_t>(n, Tuning::kPortionItems), Tuning::kTileItems);
  std::size_t starts_bytes = sizeof(index_t) * static_cast<std::size_t>(portions * places * kRadixDigits);
  std::size_t counters_bytes = sizeof(unsigned) * static_cast<std::size_t>(portions * places + 1);
  std::size_t control_bytes = align(starts_bytes + counters_bytes);
  std::size_t lookback_bytes = align(sizeof(std::uint32_t) * static_cast<std::size_t>(portion_tiles) * kRadixDigits);
  index_t* digit_starts = nullptr;  // [portion][place][digit]
  unsigned* counters = nullptr;     // [portion][place], then the histogram's blocks_done
  std::uint32_t* lookback = nullptr;

  std::size_t bytes() const { return control_bytes + lookback_bytes; }

  template <class Bits>
  void start(char* base, cudaStream_t stream, RadixTwiddle<Bits> twiddle, const Bits* keys) {
    digit_starts = reinterpret_cast<index_t*>(base);
    counters = reinterpret_cast<unsigned*>(base + starts_bytes);
    lookback = reinterpret_cast<std::uint32_t*>(base + control_bytes);
    TESSERA_CUDA_CHECK(cudaMemsetAsync(base, 0, starts_bytes + counters_bytes, stream));
    launch_radix_histogram(stream, twiddle, keys, n, begin_bit, end_bit, digit_starts, counters + portions * places);
  }

  // Clears the look-back words for (place, portion) and sets the pass's schedule fields (all but
  // the arrays and the twiddle; the place's digit digit_offset bits higher in the radix bits, as in
  // a packed word); returns its tiles, one thread block each.
  template <class Bits, class Word>
  index_t prepare(OnesweepPass<Bits, Word>& pass, int place, index_t portion, cudaStream_t stream, int digit_offset = 0) const {
    const index_t first = portion * Tuning::kPortionItems;
    const auto items = static_cast<int>(std::min<index_t>(Tuning::kPortionItems, n - first));
    const index_t tiles = ceil_div<index_t>(items, Tuning::kTileItems);
    TESSERA_CUDA_CHECK(cudaMemsetAsync(lookback, 0, sizeof(std::uint32_t) * static_cast<std::size_t>(tiles) * kRadixDigits, stream));
    pass.portion_items = items;
    pass.digit_starts = digit_starts + (portion * places + place) * kRadixDigits;
    pass.next_digit_starts = portion + 1 < portions ? digit_starts + ((portion + 1) * places + place) * kRadixDigits : nullptr;
    pass.lookback = lookback;
    pass.tile_counter = counters + portion * places + place;
    const int shift = begin_bit + place * kRadixDigitBits;
    pass.digit = RadixDigit{digit_offset + shift, (1u << std::min(kRadixDigitBits, end_bit - shift)) - 1};
    pass.convert_in = place == 0;
    pass.convert_out = place == places - 1;
    return tiles;
  }
};

// Sorts keys_in[0, n) by radix bits [begin_bit, end_bit), at least two places, with values (Key,
// Value: 4 + 4, 8 + 8 or 4 + 8 bytes), as packed words (key radix bits above the value;
// kRadixSortPackPairs, radix_packed_pair.cuh): the first place reads the two input arrays, the
// last writes the two output arrays, the places between move words. The words between alternate,
// from the last place backwards, between a spare array and an array laid over the output arrays
// (as many whole words as each holds: n / 2 in each for 4 + 4 and 8 + 8, n / 3 and 2n / 3 for
// 4 + 8; the one word left over, if any, in the scratch), so that the spare memory is one word per
// pair, as for staged pairs:
//   2 places  input -> spare -> output
//   3 places  input -> over the output -> spare -> output
//   4 places  input -> spare -> over the output -> spare -> output   (and so on, for 64-bit keys)
// Two spare arrays (two words per pair) where the output arrays cannot take words: output arrays not
// on a word's alignment, an odd number of places in place (its first place would scatter into its own input),
// or two_spares (the benchmark's comparison).
// Tuning: RadixSortPackedTuning<Key, Value>, or another shape with kPackedPairs.
template <class Tuning, class Key, class Value>
void device_radix_sort_packed(const Queue& queue, RadixTwiddle<Key> twiddle, const Key* keys_in, Key* keys_out,
                              const Value* values_in, Value* values_out, index_t n, int begin_bit, int end_bit,
                              bool two_spares = false) {
  static_assert(Tuning::kPackedPairs, "device_radix_sort_packed: a shape of packed pairs");
  using Packed = PackedWord<Key, Value>;
  using Pair = PackedPair<Packed>;
  static_assert(std::is_same_v<typename Pair::Key, Key> && std::is_same_v<typename Pair::Value, Value>,
                "a word of this key and value");
  const cudaStream_t stream = to_cuda(queue.stream);
  if (n == 0) return;
  using Schedule = OnesweepSchedule<Tuning>;
  Schedule schedule{n, begin_bit, end_bit};
  const int places = schedule.places;
  TESSERA_ASSERT(places >= 2, "packed radix sort: at least two places");
  const bool in_place = keys_in == keys_out || values_in == values_out;
  const bool outputs_take_words =
      ((reinterpret_cast<std::uintptr_t>(keys_out) | reinterpret_cast<std::uintptr_t>(values_out)) % alignof(Packed)) == 0;
  const bool one_spare = !two_spares && outputs_take_words && !(in_place && places % 2 == 1);

  const std::size_t spare_bytes = Schedule::align(sizeof(Packed) * static_cast<std::size_t>(n));
  const std::size_t tail_bytes = one_spare ? Schedule::align(sizeof(Packed)) : 0;  // the word the outputs leave over
  ScratchBuffer scratch(queue, schedule.bytes() + tail_bytes + spare_bytes * (one_spare ? 1 : 2));
  char* const base = scratch.as<char>();
  auto* const tail = reinterpret_cast<Packed*>(base + schedule.bytes());
  char* const spare_base = base + schedule.bytes() + tail_bytes;
  Packed* const spares[2] = {reinterpret_cast<Packed*>(spare_base), reinterpret_cast<Packed*>(spare_base + spare_bytes)};
  schedule.start(base, stream, twiddle, keys_in);

  // Stage s (0 .. places) is what pass s reads and pass s - 1 writes.
  enum class Stage { input, output, spare0, spare1, over_output };
  auto stage = [&](int s) {
    if (s == 0) return Stage::input;
    if (s == places) return Stage::output;
    if (!one_spare) return (s - 1) % 2 == 0 ? Stage::spare0 : Stage::spare1;
    return (places - s) % 2 == 1 ? Stage::spare0 : Stage::over_output;
  };
  // The twiddle of a word changes only its key.
  const RadixTwiddle<Packed> word_twiddle = Pair::twiddle(twiddle);
  constexpr int kDynamicBytes = kOnesweepDynamicBytes<Tuning, Packed, RadixNoValue>;
  using Kernel = void (*)(const OnesweepPass<Packed, RadixNoValue>);
  // The kernel of a pass from one stage to the next, configured before its first launch in this
  // sort (a kind of pass recurs with more than four places).
  unsigned configured_kinds = 0;
  auto kernel_for = [&](Stage from, Stage to) -> Kernel {
    auto configured = [&](auto split) -> Kernel {
      constexpr int kSplit = decltype(split)::value;
      if ((configured_kinds & (1u << kSplit)) == 0) configure_onesweep_kernel<Tuning, Packed, RadixNoValue, kSplit>();
      configured_kinds |= 1u << kSplit;
      return onesweep_kernel<Tuning, Packed, RadixNoValue, kSplit>;
    };
    const bool words_in = from == Stage::spare0 || from == Stage::spare1, words_out = to == Stage::spare0 || to == Stage::spare1;
    if (from == Stage::input && words_out) return configured(std::integral_constant<int, kRadixSplitIn>{});
    if (from == Stage::input) return configured(std::integral_constant<int, kRadixSplitIn | kRadixSegmentedOut>{});
    if (words_in && to == Stage::output) return configured(std::integral_constant<int, kRadixSplitOut>{});
    if (words_in && words_out) return configured(std::integral_constant<int, 0>{});
    if (words_in) return configured(std::integral_constant<int, kRadixSegmentedOut>{});
    return configured(std::integral_constant<int, kRadixSegmentedIn>{});  // over the output -> spare
  };
  auto words_of = [&](Stage s) { return s == Stage::spare0 ? spares[0] : spares[1]; };
  Packed* const segments[3] = {reinterpret_cast<Packed*>(keys_out), reinterpret_cast<Packed*>(values_out), tail};
  // The whole words each output array holds; at most one word is left for the tail.
  const index_t key_words = n * index_t(sizeof(Key)) / index_t(sizeof(Packed));
  const index_t segment_end[2] = {key_words, key_words + n * index_t(sizeof(Value)) / index_t(sizeof(Packed))};
  for (int place = 0; place < places; ++place) {
    const Stage from = stage(place), to = stage(place + 1);
    const Kernel kernel = kernel_for(from, to);
    for (index_t portion = 0; portion < schedule.portions; ++portion) {
      const index_t first = portion * Tuning::kPortionItems;
      OnesweepPass<Packed, RadixNoValue> pass{};
      const index_t tiles = schedule.prepare(pass, place, portion, stream, Pair::kKeyShift);
      if (from == Stage::input) {
        pass.split_keys_in = keys_in + first;
        pass.split_values_in = values_in + first;
      } else if (from != Stage::over_output) {
        pass.keys_in = words_of(from) + first;
      }
      if (to == Stage::output) {
        pass.split_keys_out = keys_out;
        pass.split_values_out = values_out;
      } else if (to != Stage::over_output) {
        pass.keys_out = words_of(to);
      }
      for (int k = 0; k < 3; ++k) pass.segment[k] = segments[k];
      pass.segment_end[0] = segment_end[0];
      pass.segment_end[1] = segment_end[1];
      pass.portion_first = first;
      pass.twiddle = word_twiddle;
      kernel<<<static_cast<unsigned>(tiles), Tuning::kBlockThreads, kDynamicBytes, stream>>>(pass);
      TESSERA_CUDA_CHECK_LAUNCH();
    }
  }
}

// Sorts keys_in[0, n) by radix bits [begin_bit, end_bit) into keys_out, values following (Word =
// RadixNoValue: keys only, value pointers null). See the file comment.
// Tuning: RadixSortTuning, or another RadixSortShape (the benchmark's tuning study).
template <class Bits, class Word, class Tuning = RadixSortTuning<Bits, Word>>
void device_radix_sort(const Queue& queue, RadixTwiddle<Bits> twiddle, const Bits* keys_in, Bits* keys_out,
                       const Word* values_in, Word* values_out, index_t n, int begin_bit, int end_bit) {
  constexpr bool kHasValues = Tuning::kHasValues;
  const cudaStream_t stream = to_cuda(queue.stream);
  if (n == 0) return;
  using Schedule = OnesweepSchedule<Tuning>;
  Schedule schedule{n, begin_bit, end_bit};
  const int places = schedule.places;
  if constexpr (kRadixSortPackPairs<Bits, Word> && std::is_same_v<Tuning, RadixSortTuning<Bits, Word>>) {
    if (places >= 2) {
      device_radix_sort_packed<RadixSortPackedTuning<Bits, Word>>(queue, twiddle, keys_in, keys_out, values_in, values_out,
                                                                  n, begin_bit, end_bit);
      return;
    }
  }
  if (places == 0) {
    if (keys_out != keys_in)
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(keys_out, keys_in, sizeof(Bits) * static_cast<std::size_t>(n),
                                         cudaMemcpyDeviceToDevice, stream));
    if constexpr (kHasValues) {
      if (values_out != values_in)
        TESSERA_CUDA_CHECK(cudaMemcpyAsync(values_out, values_in, sizeof(Word) * static_cast<std::size_t>(n),
                                           cudaMemcpyDeviceToDevice, stream));
    }
    return;
  }

  const bool in_place = keys_in == keys_out || (kHasValues && values_in == values_out);
  // An in-place sort with an odd number of places cannot scatter its first place into its input:
  // it starts in the spare array and copies the result back.
  const bool copy_back = in_place && places % 2 == 1;

  // Scratch: control words (zeroed), look-back words, spare keys and values.
  const bool need_spare = places > 1 || copy_back;
  const std::size_t spare_key_bytes = need_spare ? Schedule::align(sizeof(Bits) * static_cast<std::size_t>(n)) : 0;
  const std::size_t spare_value_bytes =
      need_spare && kHasValues ? Schedule::align(sizeof(std::conditional_t<kHasValues, Word, char>) * static_cast<std::size_t>(n)) : 0;
  ScratchBuffer scratch(queue, schedule.bytes() + spare_key_bytes + spare_value_bytes);
  char* const base = scratch.as<char>();
  auto* const spare_keys = need_spare ? reinterpret_cast<Bits*>(base + schedule.bytes()) : nullptr;
  Word* const spare_values = need_spare && kHasValues ? reinterpret_cast<Word*>(base + schedule.bytes() + spare_key_bytes) : nullptr;

  // 1. The digits of every place.
  schedule.start(base, stream, twiddle, keys_in);

  // 2. One onesweep pass per place and portion. Pass p writes buffers[(places - 1 - p) % 2] (the
  // last place keys_out), or, with copy_back, the spare array first.
  constexpr int kDynamicBytes = kOnesweepDynamicBytes<Tuning, Bits, Word>;
  configure_onesweep_kernel<Tuning, Bits, Word>();
  Bits* const key_buffers[2] = {keys_out, spare_keys};
  Word* const value_buffers[2] = {values_out, spare_values};
  const Bits* keys_from = keys_in;
  const Word* values_from = values_in;
  int destination = 0;
  for (int place = 0; place < places; ++place) {
    destination = copy_back ? (place % 2 == 0 ? 1 : 0) : (places - 1 - place) % 2;
    for (index_t portion = 0; portion < schedule.portions; ++portion) {
      const index_t first = portion * Tuning::kPortionItems;
      OnesweepPass<Bits, Word> pass{};
      const index_t tiles = schedule.prepare(pass, place, portion, stream);
      pass.keys_in = keys_from + first;
      pass.keys_out = key_buffers[destination];
      if constexpr (kHasValues) {
        pass.values_in = values_from + first;
        pass.values_out = value_buffers[destination];
      }
      pass.twiddle = twiddle;
      onesweep_kernel<Tuning, Bits, Word>
          <<<static_cast<unsigned>(tiles), Tuning::kBlockThreads, kDynamicBytes, stream>>>(pass);
      TESSERA_CUDA_CHECK_LAUNCH();
    }
    keys_from = key_buffers[destination];
    if constexpr (kHasValues) values_from = value_buffers[destination];
  }
  if (destination != 0) {
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(keys_out, spare_keys, sizeof(Bits) * static_cast<std::size_t>(n),
                                       cudaMemcpyDeviceToDevice, stream));
    if constexpr (kHasValues)
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(values_out, spare_values, sizeof(Word) * static_cast<std::size_t>(n),
                                         cudaMemcpyDeviceToDevice, stream));
  }
}

}  // namespace tessera::kernels::cuda::detail
