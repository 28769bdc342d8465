#include "tessera/framework/timer.hpp"

#include <map>
#include <utility>
#include <vector>

#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"
#endif

namespace tessera {

#if TESSERA_HAVE_CUDA
namespace {

// Timing events of this host thread, per device, reused from call to call (a timed matmul records
// two per SUMMA step). An event handed back may still be pending when its clock was abandoned by
// an exception; recording it again is allowed and replaces that record. Never destroyed: the CUDA
// runtime may be gone when the thread's storage is.
std::vector<cudaEvent_t>& free_events(int device) {
  thread_local auto* pools = new std::map<int, std::vector<cudaEvent_t>>;
  return (*pools)[device];
}

cudaEvent_t take_event(int device) {
  std::vector<cudaEvent_t>& pool = free_events(device);
  if (!pool.empty()) {
    const cudaEvent_t event = pool.back();
    pool.pop_back();
    return event;
  }
  // An event belongs to the device current at its creation; the queue's device is made current
  // for that moment only.
  int current = -1;
  TESSERA_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) TESSERA_CUDA_CHECK(cudaSetDevice(device));
  cudaEvent_t event = nullptr;
  TESSERA_CUDA_CHECK(cudaEventCreate(&event));
  if (current != device) TESSERA_CUDA_CHECK(cudaSetDevice(current));
  return event;
}

void give_back_event(int device, void* event) {
  if (event) free_events(device).push_back(static_cast<cudaEvent_t>(event));
}

void* record_event(const kernels::Queue& queue) {
  const cudaEvent_t event = take_event(queue.device);
  TESSERA_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(queue.stream)));
  return event;
}

void wait_for_event(void* event) { TESSERA_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }

double seconds_between(void* from, void* to) {
  float milliseconds = 0;
  TESSERA_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, static_cast<cudaEvent_t>(from), static_cast<cudaEvent_t>(to)));
  return 1e-3 * static_cast<double>(milliseconds);
}

}  // namespace
#else
namespace {
// Never called: without CUDA no clock times with events.
void* record_event(const kernels::Queue&) { return nullptr; }
void give_back_event(int, void*) {}
void wait_for_event(void*) {}
double seconds_between(void*, void*) { return 0; }
}  // namespace
#endif

PhaseClock::PhaseClock(const kernels::Queue& queue, bool timed)
    : queue_(queue), timed_(timed), on_device_(timed && queue.backend == Backend::cuda) {
  if (on_device_) start_event_ = record_event(queue_);
}

PhaseClock::~PhaseClock() { release_events(); }

void PhaseClock::end_phase(double* slot) {
  if (!timed_) return;
  if (on_device_) boundaries_.push_back({slot, record_event(queue_), 0.0});
  else boundaries_.push_back({slot, nullptr, watch_.lap()});
}

void PhaseClock::finish() {
  if (!timed_) return;
  if (on_device_ && !boundaries_.empty()) {
    // Events of one stream complete in the order they were recorded: the last one covers all.
    wait_for_event(boundaries_.back().event);
    void* previous = start_event_;
    for (Boundary& b : boundaries_) {
      b.seconds = seconds_between(previous, b.event);
      previous = b.event;
    }
  }
  for (const Boundary& b : boundaries_)
    if (b.slot) *b.slot += b.seconds;
  release_events();
  timed_ = false;  // finished: later calls record nothing
}

void PhaseClock::release_events() {
  if (on_device_) {
    give_back_event(queue_.device, std::exchange(start_event_, nullptr));
    for (Boundary& b : boundaries_) give_back_event(queue_.device, std::exchange(b.event, nullptr));
  }
  boundaries_.clear();
}

}  // namespace tessera
