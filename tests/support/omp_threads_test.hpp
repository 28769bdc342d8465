// A test parametrised by the OpenMP thread count: each test runs with GetParam() threads and the
// count is restored after it. For the CPU kernels, whose chunks per thread change with the count.
//
//   class MyKernelsCpu : public test::OmpThreadsTest {};
//   INSTANTIATE_TEST_SUITE_P(Threads, MyKernelsCpu, ::testing::Values(1, 2, 3, 4));
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

namespace tessera::test {

class OmpThreadsTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = omp_get_max_threads();
    omp_set_num_threads(GetParam());
  }
  void TearDown() override { omp_set_num_threads(saved_); }

 private:
  int saved_ = 1;
};

}  // namespace tessera::test
