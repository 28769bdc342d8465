// Must not compile (nvcc, with the CUDA backend): a lambda without __host__ __device__ passed to an
// algorithm that nvcc compiles for the GPU is refused at compile time, with a message that says how
// to write it (tests/unit/CMakeLists.txt checks the compiler's output).
#include "tessera/framework/algorithms.hpp"

float scaled_sum(const tessera::DistArray<float>& a, float scale) {
  return tessera::transform_reduce(a, [scale](float v) { return v * scale; }, tessera::plus{}, 0.0f);
}

int main() {
  tessera::DistArray<float> a;
  return static_cast<int>(scaled_sum(a, 2.0f));
}
