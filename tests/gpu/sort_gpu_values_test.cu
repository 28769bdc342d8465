// sort_pairs with values that are not precompiled (the header templates, instantiated here by nvcc):
// 1-, 2-, 12- and 16-byte values, against the CPU backend on the same data; and precompiled 4- and
// 8-byte values that do not start on 16 bytes (copied to shared memory element by element rather
// than in 16-byte pieces). Each value carries its input index, so that the comparison checks
// stability as well as the moves.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sort_gpu_test_support.hpp"

namespace tessera::gpu_test {
namespace {

struct Triple {  // 12 bytes, 4-byte aligned: moved as raw bytes
  float weight;
  std::int32_t index;
  std::int32_t tag;
};
struct alignas(16) Quad {  // 16 bytes, 16-byte aligned: moved as one 16-byte word
  std::int64_t index;
  double weight;
};

template <class Value>
Value value_of(index_t i) {
  if constexpr (std::is_same_v<Value, Triple>) {
    return Triple{static_cast<float>(i) * 0.5f, static_cast<std::int32_t>(i), static_cast<std::int32_t>(i * 7)};
  } else if constexpr (std::is_same_v<Value, Quad>) {
    return Quad{static_cast<std::int64_t>(i), static_cast<double>(i) * 0.25};
  } else {
    return static_cast<Value>(i);
  }
}

// value_offset: the value arrays start that many elements past an allocation's (256-byte) start.
template <class Key, class Value>
void check_values(index_t n, KeyPattern pattern, index_t value_offset = 0) {
  const auto keys = make_keys<Key>(n, pattern, test_seed() + 5 * static_cast<std::uint64_t>(n));
  std::vector<Value> values(keys.size());
  for (index_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = value_of<Value>(i);
  std::vector<Key> want_keys(keys.size());
  std::vector<Value> want_values(keys.size());
  kernels::sort_pairs(cpu_queue(), keys.data(), want_keys.data(), values.data(), want_values.data(), n);

  DeviceArray<Key> keys_in(n), keys_out(n);
  DeviceArray<Value> values_in(n, value_offset), values_out(n, value_offset);
  keys_out.poison();
  values_out.poison();
  keys_in.upload(keys);
  values_in.upload(values);
  kernels::sort_pairs(cuda_queue(), keys_in.data(), keys_out.data(), values_in.data(), values_out.data(), n);
  const std::string context = std::string(to_string(pattern)) + " " + where(n) + " value bytes " + std::to_string(sizeof(Value)) +
                              " value offset " + std::to_string(value_offset);
  ASSERT_TRUE(keys_out.untouched_outside(n)) << context;
  ASSERT_TRUE(values_out.untouched_outside(n)) << context;
  ASSERT_TRUE(same_bits(keys_out.download(), want_keys, "keys")) << context;
  ASSERT_TRUE(same_bits(values_out.download(), want_values, "values")) << context;
}

TEST(SortGpuValues, OtherValueSizesMatchTheCpuBackend) {
  std::vector<index_t> sizes = {0, 1, 31, 33, 2687, 2689, 20483};
  if (!small_mode()) sizes.push_back(1000003);
  for (KeyPattern pattern : {KeyPattern::random_bits, KeyPattern::few_unique})
    for (index_t n : sizes) {
      check_values<float, Triple>(n, pattern);
      check_values<std::uint64_t, Quad>(n, pattern);
      check_values<std::int32_t, std::uint8_t>(n, pattern);
      check_values<double, std::uint16_t>(n, pattern);
    }
}

TEST(SortGpuValues, ValuesOffSixteenBytesMatchTheCpuBackend) {
  std::vector<index_t> sizes = {1, 33, 2689, 20483};
  if (!small_mode()) sizes.push_back(1000003);
  for (index_t offset : {1, 3})
    for (index_t n : sizes) {
      check_values<float, std::uint32_t>(n, KeyPattern::random_bits, offset);
      check_values<std::uint32_t, std::uint64_t>(n, KeyPattern::random_bits, offset);
      check_values<std::int64_t, std::uint64_t>(n, KeyPattern::few_unique, offset);
    }
}

}  // namespace
}  // namespace tessera::gpu_test
