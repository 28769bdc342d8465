// The open algorithms with user functors and user element types, across ranks, against serial
// references computed on the host in index order: arrays of other element types and reductions. Compiled by nvcc where the build has
// CUDA, so that TESSERA_TEST_BACKEND=cuda runs the same tests on the device backend.
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::Mat2;
using test::MatMul;
using test::Tagged;
using test::ComposeTagged;
using test::layouts;
using test::random_values_for_io;
using test::sizes;

// ---- arrays of other element types -----------------------------------------------------------------

template <class T>
void hdf5_round_trip(const std::string& file, index_t n, std::uint64_t s) {
  const Context& world = test::world();
  const auto global = random_values_for_io<T>(n, s);
  const auto array = DistArray<T>::from_replicated(world, global, test::random_partition(n, world.size(), s));
  const io::DatasetPath path{file, "/group/values"};
  // The same dataset name for every type: each write replaces the one before.
  io::write_array(array, path,
                  io::OutputAttributes{"generic_tests", to_string(world.backend()), world.size(), {}, /*overwrite=*/true});
  const DistArray<T> back = io::read_array<T>(world, path);
  EXPECT_EQ(back.global_size(), n);
  const auto got = back.gather(0);
  if (world.rank() == 0) {
    EXPECT_EQ(got, global) << test::where(n, s);
  }
}

TEST(GenericArray, Hdf5RoundTripOfEveryArithmeticType) {
  const Context& world = test::world();
  std::uint64_t id = world.is_root() ? static_cast<std::uint64_t>(::getpid()) : 0;
  id = world.comm().bcast_value(id, 0);
  const std::string file = "/tmp/tessera_generic_io_" + std::to_string(id) + ".h5";
  for (index_t n : {index_t(0), index_t(1), index_t(1001)}) {
    hdf5_round_trip<std::int8_t>(file, n, test::seed() + 1);
    hdf5_round_trip<std::uint8_t>(file, n, test::seed() + 2);
    hdf5_round_trip<std::int16_t>(file, n, test::seed() + 3);
    hdf5_round_trip<std::uint16_t>(file, n, test::seed() + 4);
    hdf5_round_trip<std::uint32_t>(file, n, test::seed() + 5);
    hdf5_round_trip<std::uint64_t>(file, n, test::seed() + 6);
  }
  world.comm().barrier();
  if (world.is_root()) std::remove(file.c_str());
}

TEST(GenericArray, StructBlocksGatherAndMoveBetweenRanks) {
  const Context& world = test::world();
  for (index_t n : {index_t(0), index_t(3), index_t(1003)}) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_tagged(n, s);
    const auto ragged = DistArray<Tagged>::from_replicated(world, global, test::random_partition(n, world.size(), s));
    const auto balanced = rebalance(ragged);
    EXPECT_TRUE(balanced.partition() == Partition::block(n, world.size()));
    const auto got = balanced.gather(0);
    if (world.rank() == 0) {
      EXPECT_EQ(got, global) << test::where(n, s);
    }
  }
}

// ---- reductions ------------------------------------------------------------------------------------

TEST(GenericReduce, NonCommutativeAffineCompositionKeepsIndexOrder) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_affines(n, s);
    Affine expected{};
    for (const Affine& f : global) expected = ComposeAffine{}(expected, f);
    for (const auto& array : layouts(global, s)) {
      const Affine got = reduce(array, ComposeAffine{}, Affine{});
      EXPECT_EQ(got, expected) << test::where(n, s);
    }
  }
}

TEST(GenericReduce, NonCommutativeMatrixProductOf16ByteStructs) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 3 + static_cast<std::uint64_t>(n);
    const auto global = test::random_matrices(n, s);
    Mat2 expected{};
    for (const Mat2& m : global) expected = MatMul{}(expected, m);
    for (const auto& array : layouts(global, s)) EXPECT_EQ(reduce(array, MatMul{}, Mat2{}), expected) << test::where(n, s);
  }
}

TEST(GenericReduce, TwelveByteElementsTakeTheElementPath) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 5 + static_cast<std::uint64_t>(n);
    const auto global = test::random_tagged(n, s);
    Tagged expected{};
    for (const Tagged& t : global) expected = ComposeTagged{}(expected, t);
    for (const auto& array : layouts(global, s)) {
      const Tagged got = reduce(array, ComposeTagged{}, Tagged{});
      EXPECT_EQ(got, expected) << test::where(n, s);
      EXPECT_EQ(got.count, static_cast<std::uint32_t>(n));
    }
  }
}

TEST(GenericReduce, MeanAndVarianceWithAStructAccumulator) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 7 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<float>(n, s);
    long double sum = 0;
    for (float x : global) sum += x;
    const long double mean = n ? sum / n : 0;
    long double m2 = 0;
    for (float x : global) m2 += (x - mean) * (x - mean);
    for (const auto& array : layouts(global, s)) {
      const test::Moments got = transform_reduce(array, test::ToMoments{}, test::CombineMoments{}, test::Moments{});
      EXPECT_EQ(got.count, static_cast<double>(n)) << test::where(n, s);
      EXPECT_NEAR(got.mean, static_cast<double>(mean), 1e-12 + 1e-12 * std::fabs(static_cast<double>(mean)))
          << test::where(n, s);
      EXPECT_NEAR(got.m2, static_cast<double>(m2), 1e-9 * (1 + static_cast<double>(m2))) << test::where(n, s);
    }
  }
}

TEST(GenericReduce, MinAndMaxPropagateNaN) {
  const Context& world = test::world();
  std::vector<double> global(1000, 1.0);
  global[777] = std::numeric_limits<double>::quiet_NaN();
  const auto array = DistArray<double>::from_replicated(world, global);
  EXPECT_TRUE(std::isnan(reduce(array, minimum{})));
  EXPECT_TRUE(std::isnan(reduce(array, maximum{})));
}


}  // namespace
}  // namespace tessera
