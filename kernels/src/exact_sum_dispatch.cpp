// kernels::exact_sum_partial: hands the work to the backend named by the queue.
#include "exact_sum_backends.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::kernels {

template <class T>
void exact_sum_partial(const Queue& q, const T* in, index_t n, ExactAccumulator<T>* acc_out) {
  TESSERA_ASSERT(n >= 0, "exact_sum_partial: negative element count");
  if (q.backend == Backend::cpu) {
    cpu::exact_sum_partial(in, n, acc_out);
    return;
  }
#if TESSERA_HAVE_CUDA
  cuda::exact_sum_partial(in, n, acc_out, q.stream);
#else
  throw UsageError("the cuda backend was requested, but this build of Tessera has no CUDA support");
#endif
}

template void exact_sum_partial<float>(const Queue&, const float*, index_t, ExactAccumulator<float>*);
template void exact_sum_partial<double>(const Queue&, const double*, index_t, ExactAccumulator<double>*);

}  // namespace tessera::kernels
