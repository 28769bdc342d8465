// tessera_bench_sort: the local radix sort of the CUDA backend (kernels::sort_keys / sort_pairs,
// Onesweep) next to cub::DeviceRadixSort::SortKeys / SortPairs, in one process on one GPU, on the
// same keys: random bit patterns of every key type (-0.0 mapped to +0.0: CUB sorts the two zeros
// as equal, we in IEEE total order; NaNs stay), values the input index. Every pair of outputs is
// compared bit for bit before it is timed. CUB gets its temporary storage once, outside the timing,
// and 32-bit item counts below 2^31 (its fastest configuration); our calls take theirs from the
// stream-ordered pool inside the timing. Times are medians of per-call cudaEvent intervals, ours
// and CUB's in alternation. "speedup" is CUB time / our time (> 1: ours is faster); "%floor" is the
// time the bytes of an 8-bit LSD sort would take at the device-to-device copy rate measured first:
// one read of the keys (the digit counts of every place) and per place one read and one write of
// keys and values.
//
// Usage: tessera_bench_sort [--sizes 67108864,268435456 | -b 256M -e 1G -f 4] [-n 20] [-w 3] [--json FILE]
// (the harness's flags, bench/common; --reps is -n's other name; --help lists the studies)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cub/cub.cuh>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bench_cli.hpp"
#include "bench_timing.cuh"
#include "json.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/kernels.hpp"

namespace {

using tessera::index_t;
using tessera::kernels::Queue;
using namespace tessera::bench;
namespace apps = tessera::apps;

struct Options {
  std::vector<index_t> sizes = {index_t(1) << 26, index_t(1) << 28};
  int reps = 20;  // from the harness
  int warmup = 3;
  std::vector<std::string> only;  // row names (keys-uint32, pairs-float-64, ...); empty: all
  bool study = false;             // the tuning study of 4-byte keys instead of the table
  bool study64 = false;           // the tuning study of 8-byte keys instead of the table
  bool study_carveout = false;    // the shared-memory carveout study instead of the table
  bool study_packed = false;      // pairs staged or packed into one word per pair, instead of the table
};

// The harness's flags (-b/-e: bytes of 4-byte keys, default 256 MiB to 1 GiB by 4, that is 2^26 and
// 2^28 keys of every type; -n timed calls, alias --reps; -w; --json) and this benchmark's own.
Options parse(Harness& h, int argc, char** argv) {
  Options o;
  h.add_alias("--iters", "--reps");
  h.add_option({"--sizes"}, "N,...", "key counts instead of -b/-e (2^k, K/M/G; below 2^31)", [&o](std::string_view v) {
    o.sizes.clear();
    for (long long n : parse_counts(v, "--sizes")) o.sizes.push_back(n);
  });
  h.add_option({"--only"}, "ROWS",
               "keys-uint32, keys-int32, keys-float, keys-uint64, keys-int64, keys-double, pairs-uint32-32, "
               "pairs-float-64, pairs-uint64-64 (comma separated; default all)",
               [&o](std::string_view v) { o.only = split(std::string(v)); });
  h.add_switch({"--study"},
               "instead of the table: other shapes of the onesweep pass (threads x keys per thread, resident blocks "
               "per SM, look-back batch) for uint32 keys and (uint32, uint32) pairs, each against CUB",
               &o.study);
  h.add_switch({"--study64"}, "the same for uint64 keys and (uint64, uint64) pairs, the pass's storage static or dynamic",
               &o.study64);
  h.add_switch({"--study-carveout"},
               "larger tiles (the pass's storage in dynamic shared memory), wide values sorted part by part, and the "
               "smallest shared-memory carveout that keeps the blocks resident",
               &o.study_carveout);
  h.add_switch({"--study-packed"},
               "(uint32, uint32), (uint32, uint64) and (uint64, uint64) pairs staged (values beside the keys) or packed "
               "into one word per pair, each against CUB",
               &o.study_packed);
  parse_command_line(h, argc, argv);
  if (h.sizes_given() && h.given("--sizes")) usage_error("--sizes and -b/-e: give one or the other");
  if (!h.given("--sizes")) o.sizes = h.sizes(4);
  for (index_t n : o.sizes)
    if (n >= (index_t(1) << 31)) usage_error("--sizes: CUB's 32-bit item counts take sizes below 2^31");
  o.reps = h.iters();
  o.warmup = h.warmup();
  return o;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  return "?";
}

template <class Key>
__global__ void fill_keys_kernel(Key* keys, index_t n, std::uint64_t seed) {
  using Bits = typename tessera::kernels::RadixKey<Key>::Bits;
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += index_t(gridDim.x) * blockDim.x) {
    Bits bits = static_cast<Bits>(tessera::counter_bits(seed, static_cast<std::uint64_t>(i)));
    if constexpr (std::is_floating_point_v<Key>) {
      if (bits == Bits(1) << (8 * sizeof(Bits) - 1)) bits = 0;  // -0.0 -> +0.0
    }
    memcpy(keys + i, &bits, sizeof bits);
  }
}

template <class T>
__global__ void iota_kernel(T* values, index_t n) {
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += index_t(gridDim.x) * blockDim.x)
    values[i] = static_cast<T>(i);
}

__global__ void count_differences_kernel(const unsigned char* a, const unsigned char* b, std::size_t bytes,
                                         unsigned long long* differences) {
  unsigned long long count = 0;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += std::size_t(gridDim.x) * blockDim.x)
    count += a[i] != b[i];
  if (count) atomicAdd(differences, count);
}

bool same_bytes(const Queue& q, const void* a, const void* b, std::size_t bytes) {
  unsigned long long* d = nullptr;
  TESSERA_CUDA_CHECK(cudaMallocAsync(&d, sizeof *d, stream_of(q)));
  TESSERA_CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof *d, stream_of(q)));
  count_differences_kernel<<<1024, 256, 0, stream_of(q)>>>(static_cast<const unsigned char*>(a),
                                                           static_cast<const unsigned char*>(b), bytes, d);
  TESSERA_CUDA_CHECK_LAUNCH();
  unsigned long long h = 0;
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, stream_of(q)));
  TESSERA_CUDA_CHECK(cudaFreeAsync(d, stream_of(q)));
  q.synchronize();
  return h == 0;
}

struct Row {
  std::string op, keys, values;
  index_t n = 0;
  Timing ours_ms;
  double cub_ms = 0, floor_ms = 0;
  bool agree = false;
};
Harness* g_harness = nullptr;

// A table line and the harness's row: shares of the vendor (CUB's time over ours) and of copy (the
// time an 8-bit LSD sort's bytes take at the copy rate over ours).
void print_row(const Row& r) {
  std::printf("%-6s %-7s %-7s %11lld %9.3f %9.3f %8.2f %8.2f %7.3f %6.1f%% %s\n", r.op.c_str(), r.keys.c_str(),
              r.values.c_str(), static_cast<long long>(r.n), r.ours_ms.median, r.cub_ms, r.n / (r.ours_ms * 1e6),
              r.n / (r.cub_ms * 1e6), r.cub_ms / r.ours_ms, 100.0 * r.floor_ms / r.ours_ms, r.agree ? "yes" : "NO");
  std::fflush(stdout);
  g_harness->row(r.op + " " + r.keys + " " + r.values + " n=" + std::to_string(r.n))
      .set("op", r.op)
      .set("keys", r.keys)
      .set("values", r.values)
      .set("n", r.n)
      .set("ours_ms", r.ours_ms.median)
      .set("cub_ms", r.cub_ms)
      .set("speedup", r.cub_ms / r.ours_ms)
      .set("percent_floor", 100.0 * r.floor_ms / r.ours_ms)
      .set("agree", r.agree)
      .time(seconds(r.ours_ms))
      .share("vendor", r.cub_ms / r.ours_ms)
      .share("copy", r.floor_ms / r.ours_ms)
      .verdict(r.agree, "differs from CUB's");
  g_harness->print_pending();
}

template <class T>
T* device_array(index_t n) {
  T* p = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * static_cast<std::size_t>(n)));
  return p;
}

// Keys alone (Value = void) or pairs with the input index as value.
template <class Key, class Value>
void bench_sort(const Queue& q, const Options& o, index_t n, double copy_gbs) {
  constexpr bool kPairs = !std::is_void_v<Value>;
  using V = std::conditional_t<kPairs, Value, char>;
  const std::string name = std::string(kPairs ? "pairs-" : "keys-") + type_name<Key>() +
                           (kPairs ? (sizeof(V) == 4 ? "-32" : "-64") : "");
  if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), name) == o.only.end()) return;
  const auto stream = stream_of(q);
  const int count = static_cast<int>(n);
  Key* keys_in = device_array<Key>(n);
  Key* ours_keys = device_array<Key>(n);
  Key* cub_keys = device_array<Key>(n);
  V* values_in = kPairs ? device_array<V>(n) : nullptr;
  V* ours_values = kPairs ? device_array<V>(n) : nullptr;
  V* cub_values = kPairs ? device_array<V>(n) : nullptr;
  fill_keys_kernel<<<1024, 256, 0, stream>>>(keys_in, n, 20240601u + sizeof(Key));
  TESSERA_CUDA_CHECK_LAUNCH();
  if constexpr (kPairs) {
    iota_kernel<<<1024, 256, 0, stream>>>(values_in, n);
    TESSERA_CUDA_CHECK_LAUNCH();
  }
  std::size_t temp_bytes = 0;
  if constexpr (kPairs) {
    TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, cub_keys, values_in, cub_values,
                                                       count, 0, 8 * int(sizeof(Key)), stream));
  } else {
    TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys_in, cub_keys, count, 0,
                                                      8 * int(sizeof(Key)), stream));
  }
  void* temp = nullptr;
  TESSERA_CUDA_CHECK(cudaMalloc(&temp, temp_bytes));
  auto ours = [&] {
    if constexpr (kPairs) {
      tessera::kernels::sort_pairs(q, keys_in, ours_keys, values_in, ours_values, n);
    } else {
      tessera::kernels::sort_keys(q, keys_in, ours_keys, n);
    }
  };
  auto vendor = [&] {
    if constexpr (kPairs) {
      TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, cub_keys, values_in, cub_values,
                                                         count, 0, 8 * int(sizeof(Key)), stream));
    } else {
      TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in, cub_keys, count, 0,
                                                        8 * int(sizeof(Key)), stream));
    }
  };
  ours();
  vendor();
  Row r;
  r.op = kPairs ? "pairs" : "keys";
  r.keys = type_name<Key>();
  r.values = kPairs ? (sizeof(V) == 4 ? "32-bit" : "64-bit") : "-";
  r.n = n;
  r.agree = same_bytes(q, ours_keys, cub_keys, sizeof(Key) * static_cast<std::size_t>(n));
  if constexpr (kPairs) r.agree = r.agree && same_bytes(q, ours_values, cub_values, sizeof(V) * static_cast<std::size_t>(n));
  std::tie(r.ours_ms, r.cub_ms) = median_pair_ms(q, o.warmup, o.reps, ours, vendor);
  const double places = static_cast<double>(sizeof(Key));
  const double bytes = static_cast<double>(n) * (sizeof(Key) * (1 + 2 * places) + (kPairs ? sizeof(V) * 2 * places : 0));
  r.floor_ms = bytes / (copy_gbs * 1e6);
  print_row(r);
  TESSERA_CUDA_CHECK(cudaFree(temp));
  for (void* p : {static_cast<void*>(keys_in), static_cast<void*>(ours_keys), static_cast<void*>(cub_keys),
                  static_cast<void*>(values_in), static_cast<void*>(ours_values), static_cast<void*>(cub_values)})
    if (p) TESSERA_CUDA_CHECK(cudaFree(p));
  tessera::kernels::release_cached_memory();
}

// ---- the tuning study -----------------------------------------------------------------------------

using tessera::kernels::cuda::detail::WarpMatch;

template <int Threads, int Items, int MinBlocks, int Batch, WarpMatch Match, bool Stage, bool Dynamic, bool Fit, bool Parts>
struct Shape {
  static std::string name() {
    return std::to_string(Threads) + "x" + std::to_string(Items) + " min" + std::to_string(MinBlocks) + " batch" +
           std::to_string(Batch) + (Match == WarpMatch::atomic_or ? " or" : "") + (Stage ? " stage" : "") + (Dynamic ? " dyn" : "") +
           (Fit ? " fit" : "") + (Parts ? " parts" : "");
  }
};

// The arrays of one study of Key keys: the input (random bits) and both sorts' outputs, 8-byte
// values (the input index, read as 4-byte values by the pairs of 4-byte values), and CUB's
// temporary storage, large enough for keys alone and for pairs with 4- or 8-byte values.
template <class Key>
struct StudyArrays {
  index_t n;
  Key* keys_in = device_array<Key>(n);
  Key* ours = device_array<Key>(n);
  Key* theirs = device_array<Key>(n);
  std::uint64_t* values_in = device_array<std::uint64_t>(n);
  std::uint64_t* ours_values = device_array<std::uint64_t>(n);
  std::uint64_t* their_values = device_array<std::uint64_t>(n);
  void* temp = nullptr;
  std::size_t temp_bytes = 0;

  StudyArrays(const Queue& q, index_t count) : n(count) {
    const auto stream = stream_of(q);
    fill_keys_kernel<<<1024, 256, 0, stream>>>(keys_in, n, 20240601u + sizeof(Key));
    TESSERA_CUDA_CHECK_LAUNCH();
    iota_kernel<<<1024, 256, 0, stream>>>(values_in, n);
    TESSERA_CUDA_CHECK_LAUNCH();
    const int items = static_cast<int>(n), end_bit = 8 * static_cast<int>(sizeof(Key));
    std::size_t keys_bytes = 0, pair_bytes = 0, wide_bytes = 0;
    TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, keys_bytes, keys_in, theirs, items, 0, end_bit, stream));
    TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, pair_bytes, keys_in, theirs,
                                                       reinterpret_cast<const std::uint32_t*>(values_in),
                                                       reinterpret_cast<std::uint32_t*>(their_values), items, 0, end_bit,
                                                       stream));
    TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, wide_bytes, keys_in, theirs, values_in, their_values, items,
                                                       0, end_bit, stream));
    temp_bytes = std::max({keys_bytes, pair_bytes, wide_bytes});
    TESSERA_CUDA_CHECK(cudaMalloc(&temp, temp_bytes));
  }
  ~StudyArrays() {
    for (void* p : {temp, static_cast<void*>(keys_in), static_cast<void*>(ours), static_cast<void*>(theirs),
                    static_cast<void*>(values_in), static_cast<void*>(ours_values), static_cast<void*>(their_values)})
      TESSERA_CUDA_CHECK(cudaFree(p));
  }
  StudyArrays(const StudyArrays&) = delete;
  StudyArrays& operator=(const StudyArrays&) = delete;
};

// One of the studies' sorts against CUB on the same arrays: `mine` sorts a.keys_in (with the input
// index as values of type V from a.values_in; V = void: keys alone) into a.ours (a.ours_values);
// both outputs are compared bit for bit (a disagreement is counted), then both sorts timed in
// alternation.
struct StudyTimes {
  double ours_ms = 0, cub_ms = 0;
  bool agree = false;
};
template <class Key, class V, class Mine>
StudyTimes time_study(const Queue& q, const Options& o, const StudyArrays<Key>& a, const Mine& mine) {
  constexpr bool kPairs = !std::is_void_v<V>;
  using Value = std::conditional_t<kPairs, V, std::uint32_t>;
  constexpr int kEndBit = 8 * static_cast<int>(sizeof(Key));
  const auto* values_in = reinterpret_cast<const Value*>(a.values_in);
  auto* their_values = reinterpret_cast<Value*>(a.their_values);
  const auto stream = stream_of(q);
  const auto bytes = [&](std::size_t size) { return size * static_cast<std::size_t>(a.n); };
  auto vendor = [&] {
    std::size_t temp_bytes = a.temp_bytes;
    if constexpr (kPairs) {
      TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(a.temp, temp_bytes, a.keys_in, a.theirs, values_in, their_values,
                                                         static_cast<int>(a.n), 0, kEndBit, stream));
    } else {
      TESSERA_CUDA_CHECK(
          cub::DeviceRadixSort::SortKeys(a.temp, temp_bytes, a.keys_in, a.theirs, static_cast<int>(a.n), 0, kEndBit, stream));
    }
  };
  mine();
  vendor();
  StudyTimes t;
  t.agree = same_bytes(q, a.ours, a.theirs, bytes(sizeof(Key))) &&
            (!kPairs || same_bytes(q, a.ours_values, a.their_values, bytes(sizeof(Value))));
  if (!t.agree)  // counted as a disagreement
    g_harness->row("study " + std::string(type_name<Key>()) + " n=" + std::to_string(a.n))
        .verdict(false, "a study's shape differs from CUB's");
  std::tie(t.ours_ms, t.cub_ms) = median_pair_ms(q, o.warmup, o.reps, mine, vendor);
  return t;
}

// One line of a study: op, shape, size, times, speedup, agreement and a note.
void print_study(const std::string& op, const std::string& shape, index_t n, const StudyTimes& t, const std::string& note) {
  std::printf("study  %-8s %-34s %11lld %9.3f %9.3f %7.3f %s%s\n", op.c_str(), shape.c_str(), static_cast<long long>(n),
              t.ours_ms, t.cub_ms, t.cub_ms / t.ours_ms, t.agree ? "yes" : "NO", note.c_str());
  std::fflush(stdout);
}

template <class Key, class Word, int Threads, int Items, int MinBlocks, int Batch, WarpMatch Match = WarpMatch::ballots,
          bool Stage = false, bool Dynamic = false, bool Fit = false, bool Parts = false>
void study_shape(const Queue& q, const Options& o, const StudyArrays<Key>& a) {
  using namespace tessera::kernels;
  using Tuning = tessera::kernels::cuda::detail::RadixSortShape<Key, Word, Threads, Items, MinBlocks, Batch, Match, Stage,
                                                                Dynamic, Fit, Parts, false>;
  constexpr bool kPairs = !std::is_same_v<Word, RadixNoValue>;
  const StudyTimes t = time_study<Key, std::conditional_t<kPairs, Word, void>>(q, o, a, [&] {
    tessera::kernels::cuda::detail::device_radix_sort<Key, Word, Tuning>(
        q, RadixTwiddle<Key>{}, a.keys_in, a.ours, reinterpret_cast<const Word*>(a.values_in),
        reinterpret_cast<Word*>(a.ours_values), a.n, 0, 8 * static_cast<int>(sizeof(Key)));
  });
  // Resident blocks per SM and the L1 left beside them, as the sort configured the kernel.
  int resident = 0;
  TESSERA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &resident, tessera::kernels::cuda::detail::onesweep_kernel<Tuning, Key, Word>, Threads,
      tessera::kernels::cuda::detail::kOnesweepDynamicBytes<Tuning, Key, Word>));
  cudaFuncAttributes attributes{};
  TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&attributes, tessera::kernels::cuda::detail::onesweep_kernel<Tuning, Key, Word>));
  const std::string op = std::string(kPairs ? (sizeof(Word) == 4 ? "pairs" : "pairs8") : "keys") + (sizeof(Key) == 8 ? "64" : "");
  print_study(op, Shape<Threads, Items, MinBlocks, Batch, Match, Stage, Dynamic, Fit, Parts>::name(), a.n, t,
              "  " + std::to_string(resident) + " blocks/SM, carveout " + std::to_string(attributes.preferredShmemCarveout) + "%");
}

// uint32 keys alone and with uint32 values, in several onesweep shapes, each against CUB.
void study(const Queue& q, const Options& o, index_t n) {
  using tessera::kernels::RadixNoValue;
  const StudyArrays<std::uint32_t> arrays(q, n);
  std::printf("\n%-6s %-6s %-24s %11s %9s %9s %7s %s\n", "study", "op", "shape", "n", "ours ms", "cub ms", "speedup", "agree");
  {
    // CUB with uint32 and with int32 keys, the same bits: their times differ in the table above.
    const auto stream = stream_of(q);
    const std::uint32_t* keys_in = arrays.keys_in;
    std::uint32_t* theirs = arrays.theirs;
    void* temp = arrays.temp;
    std::size_t temp_bytes = arrays.temp_bytes;
    auto* signed_in = reinterpret_cast<const std::int32_t*>(keys_in);
    auto* signed_out = reinterpret_cast<std::int32_t*>(theirs);
    auto cub_unsigned = [&] {
      TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in, theirs, static_cast<int>(n), 0, 32, stream));
    };
    auto cub_signed = [&] {
      TESSERA_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, signed_in, signed_out, static_cast<int>(n), 0, 32, stream));
    };
    const auto [unsigned_ms, signed_ms] = median_pair_ms(q, o.warmup, o.reps, cub_unsigned, cub_signed);
    std::printf("study  cub    uint32 keys / int32 keys, same bits %11lld %9.3f %9.3f\n", static_cast<long long>(n),
                unsigned_ms, signed_ms);
  }
#define STUDY(Word, T, I, M, B, ...) study_shape<std::uint32_t, Word, T, I, M, B __VA_OPT__(, ) __VA_ARGS__>(q, o, arrays)
  STUDY(RadixNoValue, 384, 20, 2, 4);
  STUDY(RadixNoValue, 384, 20, 2, 1);
  STUDY(RadixNoValue, 384, 20, 3, 4);
  STUDY(RadixNoValue, 384, 24, 2, 4);
  STUDY(RadixNoValue, 512, 16, 2, 4);
  STUDY(RadixNoValue, 256, 24, 3, 4);
  STUDY(RadixNoValue, 384, 20, 2, 4, WarpMatch::atomic_or);
  STUDY(RadixNoValue, 384, 24, 2, 4, WarpMatch::atomic_or);
  STUDY(std::uint32_t, 384, 17, 2, 4);
  STUDY(std::uint32_t, 384, 23, 1, 4);
  STUDY(std::uint32_t, 384, 20, 2, 4);
  STUDY(std::uint32_t, 384, 17, 2, 4, WarpMatch::atomic_or);
  STUDY(std::uint32_t, 384, 21, 2, 4);
  STUDY(std::uint32_t, 384, 22, 2, 4);
  STUDY(std::uint32_t, 384, 23, 2, 4);
  STUDY(std::uint32_t, 384, 24, 2, 4);
  STUDY(std::uint32_t, 384, 21, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint32_t, 384, 23, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint32_t, 384, 24, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint32_t, 384, 26, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint32_t, 384, 28, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint32_t, 384, 30, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint64_t, 384, 15, 2, 4);
  STUDY(std::uint64_t, 384, 15, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint64_t, 384, 18, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint64_t, 384, 20, 2, 4, WarpMatch::ballots, true);
  STUDY(std::uint32_t, 384, 23, 2, 4, WarpMatch::atomic_or);
  STUDY(std::uint32_t, 384, 20, 2, 4, WarpMatch::atomic_or);
#undef STUDY
}

// uint64 keys alone and with uint64 values (staged), the storage static (a tile of 8-byte keys
// within 48 KB: 15 per thread) or dynamic (more), each against CUB.
void study64(const Queue& q, const Options& o, index_t n) {
  using tessera::kernels::RadixNoValue;
  const StudyArrays<std::uint64_t> arrays(q, n);
  std::printf("\n%-6s %-8s %-28s %11s %9s %9s %7s %s\n", "study", "op", "shape", "n", "ours ms", "cub ms", "speedup", "agree");
#define STUDY64(Word, T, I, M, B, ...) study_shape<std::uint64_t, Word, T, I, M, B __VA_OPT__(, ) __VA_ARGS__>(q, o, arrays)
  STUDY64(RadixNoValue, 384, 15, 2, 4);
  STUDY64(RadixNoValue, 384, 15, 2, 4, WarpMatch::ballots, false, true);
  STUDY64(RadixNoValue, 384, 18, 2, 4, WarpMatch::ballots, false, true);
  STUDY64(RadixNoValue, 384, 20, 2, 4, WarpMatch::ballots, false, true);
  STUDY64(RadixNoValue, 384, 22, 2, 4, WarpMatch::ballots, false, true);
  STUDY64(std::uint64_t, 384, 15, 2, 4, WarpMatch::ballots, true);
  STUDY64(std::uint64_t, 384, 15, 2, 4, WarpMatch::ballots, true, true);
  STUDY64(std::uint64_t, 384, 17, 2, 4, WarpMatch::ballots, true, true);
  STUDY64(std::uint64_t, 384, 18, 2, 4, WarpMatch::ballots, true, true);
#undef STUDY64
}

// Tiles larger than the static 48 KB holds (the pass's storage in dynamic shared memory), values
// wider than the keys sorted part by part, and the shared-memory carveout: the smallest that keeps
// the blocks resident (fit: the rest of the SM's memory L1) or the largest (shapes with dynamic
// shared memory) or the driver's choice (static only); the tuning's shapes among them, each
// against CUB.
void study_carveout(const Queue& q, const Options& o, index_t n) {
  using tessera::kernels::RadixNoValue;
  std::printf("\n%-6s %-8s %-34s %11s %9s %9s %7s %s\n", "study", "op", "shape", "n", "ours ms", "cub ms", "speedup", "agree");
  {
    const StudyArrays<std::uint32_t> arrays(q, n);
#define STUDY(Word, I, Match, Stage, Dynamic, Fit, Parts) \
  study_shape<std::uint32_t, Word, 384, I, 2, 4, Match, Stage, Dynamic, Fit, Parts>(q, o, arrays)
    STUDY(RadixNoValue, 24, WarpMatch::atomic_or, false, false, false, false);
    STUDY(RadixNoValue, 24, WarpMatch::atomic_or, false, false, true, false);
    STUDY(RadixNoValue, 24, WarpMatch::atomic_or, false, true, true, false);
    STUDY(RadixNoValue, 28, WarpMatch::atomic_or, false, true, true, false);
    STUDY(RadixNoValue, 32, WarpMatch::atomic_or, false, true, true, false);
    STUDY(std::uint32_t, 30, WarpMatch::ballots, true, false, false, false);
    STUDY(std::uint32_t, 30, WarpMatch::ballots, true, false, true, false);
    STUDY(std::uint32_t, 32, WarpMatch::ballots, true, true, false, false);
    STUDY(std::uint32_t, 34, WarpMatch::ballots, true, true, false, false);
    STUDY(std::uint64_t, 20, WarpMatch::ballots, true, false, false, false);
    STUDY(std::uint64_t, 20, WarpMatch::ballots, true, false, false, true);
    STUDY(std::uint64_t, 22, WarpMatch::ballots, true, false, false, true);
    STUDY(std::uint64_t, 24, WarpMatch::ballots, true, false, false, true);
    STUDY(std::uint64_t, 24, WarpMatch::ballots, true, false, true, true);
#undef STUDY
  }
  {
    const StudyArrays<std::uint64_t> arrays(q, n);
#define STUDY64(Word, I, Stage, Dynamic, Fit) \
  study_shape<std::uint64_t, Word, 384, I, 2, 4, WarpMatch::ballots, Stage, Dynamic, Fit>(q, o, arrays)
    STUDY64(RadixNoValue, 15, false, false, false);
    STUDY64(RadixNoValue, 15, false, false, true);
    STUDY64(RadixNoValue, 20, false, true, false);
    STUDY64(RadixNoValue, 20, false, true, true);
    STUDY64(RadixNoValue, 22, false, true, true);
    STUDY64(std::uint64_t, 18, true, true, false);
    STUDY64(std::uint64_t, 18, true, true, true);
#undef STUDY64
  }
}

// One packed shape of (Key, Value) pairs of unsigned words (4 + 4, 8 + 8, 4 + 8 bytes): one word
// per pair, Items per thread, the words between the places in a spare array and over the output
// arrays, or in two spare arrays; the carveout fitted or the largest; the warp match of the ranking.
template <class Key, class Value, int Items, bool Fit, WarpMatch Match = WarpMatch::ballots>
void study_packed_shape(const Queue& q, const Options& o, const StudyArrays<Key>& a, bool two_spares) {
  using tessera::kernels::RadixNoValue;
  using tessera::kernels::cuda::detail::PackedWord;
  using Tuning = tessera::kernels::cuda::detail::RadixSortShape<PackedWord<Key, Value>, RadixNoValue, 384, Items, 2, 4,
                                                                Match, false, true, Fit, false, true>;
  const StudyTimes t = time_study<Key, Value>(q, o, a, [&] {
    tessera::kernels::cuda::detail::device_radix_sort_packed<Tuning>(
        q, tessera::kernels::RadixTwiddle<Key>{}, a.keys_in, a.ours, reinterpret_cast<const Value*>(a.values_in),
        reinterpret_cast<Value*>(a.ours_values), a.n, 0, 8 * static_cast<int>(sizeof(Key)), two_spares);
  });
  const std::string op = std::string(sizeof(Value) == 4 ? "pairs" : "pairs8") + (sizeof(Key) == 8 ? "64" : "");
  print_study(op,
              "packed " + std::to_string(8 * sizeof(PackedWord<Key, Value>)) + "b 384x" + std::to_string(Items) + (Fit ? " fit" : "") +
                  (two_spares ? " two spares" : " over output") +
                  (Match == WarpMatch::atomic_or ? " or" : ""),
              a.n, t, "");
}

// (uint32, uint32), (uint32, uint64) and (uint64, uint64) pairs: the staged shape (values copied
// beside the keys, two arrays through each pass) against the pairs packed into one word each (one
// array), each against CUB.
void study_packed(const Queue& q, const Options& o, index_t n) {
  using tessera::kernels::RadixNoValue;
  std::printf("\n%-6s %-8s %-34s %11s %9s %9s %7s %s\n", "study", "op", "shape", "n", "ours ms", "cub ms", "speedup", "agree");
  {
    const StudyArrays<std::uint32_t> arrays(q, n);
    study_shape<std::uint32_t, std::uint32_t, 384, 34, 2, 4, WarpMatch::ballots, true, true, false, false>(q, o, arrays);
    study_packed_shape<std::uint32_t, std::uint32_t, 20, true>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint32_t, 20, true>(q, o, arrays, true);
    study_packed_shape<std::uint32_t, std::uint32_t, 20, false>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint32_t, 18, true>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint32_t, 22, true>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint32_t, 20, true, WarpMatch::atomic_or>(q, o, arrays, false);
    study_shape<std::uint32_t, std::uint64_t, 384, 24, 2, 4, WarpMatch::ballots, true, false, false, true>(q, o, arrays);
    study_packed_shape<std::uint32_t, std::uint64_t, 16, true>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint64_t, 16, true>(q, o, arrays, true);
    study_packed_shape<std::uint32_t, std::uint64_t, 16, false>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint64_t, 14, true>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint64_t, 18, true>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint64_t, 16, true, WarpMatch::atomic_or>(q, o, arrays, false);
    study_packed_shape<std::uint32_t, std::uint64_t, 15, true, WarpMatch::atomic_or>(q, o, arrays, false);
  }
  {
    const StudyArrays<std::uint64_t> arrays(q, n);
    study_shape<std::uint64_t, std::uint64_t, 384, 18, 2, 4, WarpMatch::ballots, true, true, false, false>(q, o, arrays);
    study_packed_shape<std::uint64_t, std::uint64_t, 12, true>(q, o, arrays, false);
    study_packed_shape<std::uint64_t, std::uint64_t, 12, true>(q, o, arrays, true);
    study_packed_shape<std::uint64_t, std::uint64_t, 12, false>(q, o, arrays, false);
    study_packed_shape<std::uint64_t, std::uint64_t, 10, true>(q, o, arrays, false);
    study_packed_shape<std::uint64_t, std::uint64_t, 14, true>(q, o, arrays, false);
    study_packed_shape<std::uint64_t, std::uint64_t, 12, true, WarpMatch::atomic_or>(q, o, arrays, false);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Harness h("tessera_bench_sort", "The local radix sort (keys, and pairs) against cub::DeviceRadixSort on one GPU.",
            {.minbytes = index_t(256) << 20, .maxbytes = index_t(1) << 30, .stepfactor = 4, .iters = 20, .warmup = 3});
  g_harness = &h;
  const Options o = parse(h, argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "tessera_bench_sort: no usable CUDA device\n");
    return 77;
  }
  const Queue q = tessera::kernels::make_cuda_queue(0);
  const std::string device = tessera::kernels::describe_device(q);
  set_local_environment(h, q);
  const double copy_gbs = measure_copy_gbs(q);
  h.configuration()["copy_gbs"] = copy_gbs;
  std::printf("tessera_bench_sort on %s\n", device.c_str());
  std::printf("device-to-device copy: %.1f GB/s (bytes read + written, 1 GiB copy, median of 10)\n", copy_gbs);
  std::printf("speedup = CUB time / our time (> 1: ours is faster); %%floor = bytes of an 8-bit LSD sort at the copy rate\n\n");
  std::printf("%-6s %-7s %-7s %11s %9s %9s %8s %8s %7s %7s %s\n", "op", "keys", "values", "n", "ours ms", "cub ms",
              "ours G/s", "cub G/s", "speedup", "%floor", "agree");
  for (index_t n : o.sizes) {
    if (o.study || o.study64 || o.study_carveout || o.study_packed) {
      if (o.study) study(q, o, n);
      if (o.study64) study64(q, o, n);
      if (o.study_carveout) study_carveout(q, o, n);
      if (o.study_packed) study_packed(q, o, n);
      continue;
    }
    bench_sort<std::uint32_t, void>(q, o, n, copy_gbs);
    bench_sort<std::int32_t, void>(q, o, n, copy_gbs);
    bench_sort<float, void>(q, o, n, copy_gbs);
    bench_sort<std::uint64_t, void>(q, o, n, copy_gbs);
    bench_sort<std::int64_t, void>(q, o, n, copy_gbs);
    bench_sort<double, void>(q, o, n, copy_gbs);
    bench_sort<std::uint32_t, std::uint32_t>(q, o, n, copy_gbs);
    bench_sort<float, std::int64_t>(q, o, n, copy_gbs);
    bench_sort<std::uint64_t, std::uint64_t>(q, o, n, copy_gbs);
  }
  if (finish(h) != 0) {
    std::fprintf(stderr, "tessera_bench_sort: some results disagree with CUB (rows marked NO)\n");
    return 1;
  }
  return 0;
}
