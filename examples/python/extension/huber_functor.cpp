// The functor and the distributed call: the sum over the global array of the Huber loss of each
// element, one transform_reduce (the loss on each element inside the local reduce, then one
// allreduce). Compiled by nvcc where the functor must run on GPUs (CMakeLists.txt).
#include "huber.hpp"

#include "tessera/framework/algorithms.hpp"

namespace {

struct HuberLoss {
  double delta;
  TESSERA_HOST_DEVICE double operator()(double r) const {
    const double a = r < 0 ? -r : r;
    return a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
  }
};

}  // namespace

double huber_sum(const tessera::DistArray<double>& residuals, double delta) {
  return tessera::transform_reduce(residuals, HuberLoss{delta}, tessera::plus{}, 0.0);
}
