// main() of the GPU test binary: exits with 77, which ctest reports as "skipped", where no usable
// GPU is present, so that a machine without a GPU never reports these tests as passed.
#include <gtest/gtest.h>

#include <cstdio>

#include "tessera/kernels/queue.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (tessera::kernels::cuda_device_count() == 0) {
    std::printf("tessera GPU tests: no usable CUDA device; skipped\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
