// kernels::exact_sum_partial: hands the work to the backend named by the queue.
#include "backend_dispatch.hpp"
#include "exact_sum_backends.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::kernels {

template <class T>
void exact_sum_partial(const Queue& q, const T* in, index_t n, ExactAccumulator<T>* acc_out) {
  TESSERA_ASSERT(n >= 0, "exact_sum_partial: negative element count");
  TESSERA_DISPATCH(q, cpu::exact_sum_partial(in, n, acc_out), cuda::exact_sum_partial(q, in, n, acc_out));
}

template void exact_sum_partial<float>(const Queue&, const float*, index_t, ExactAccumulator<float>*);
template void exact_sum_partial<double>(const Queue&, const double*, index_t, ExactAccumulator<double>*);

}  // namespace tessera::kernels
