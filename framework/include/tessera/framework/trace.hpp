// NVTX ranges for profilers: Nsight Systems and Nsight Compute, or any tool on NVTX's injection
// interface, see each distributed call as a range in the domain "Tessera", named by its algorithm,
// its size and the rank ("reduce (n 268435456, rank 0 of 4)"), with its phases nested inside it
// ("reduce: local", "reduce: communication", "reduce: fix-up"; an exchange's "plan", "pack",
// "exchange", "unpack"), and the halo exchanges and the HDF5 reads and writes beside them.
//
// Without a tool (NVTX_INJECTION64_PATH unset when the process started) a range costs one test of a
// flag read once at start-up; no string is formatted and NVTX is not called. Built without the
// nvtx3 headers (no CUDA Toolkit), ranges are never recorded.
//
//   trace::Range whole({"my_algorithm", n}, ctx);      // the call: name, size, rank
//   { trace::Range phase({"my_algorithm", n}, "pack"); ... }
//   trace::Range io("write file.h5");                  // a name alone
//   trace::Phases steps({"sort"}); steps.next("local sort"); ...; steps.next("splitters");
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

class Context;

namespace trace {

// What a range is of: an algorithm (a name with static storage duration) and its global size.
struct Call {
  const char* name = "";
  std::int64_t n = -1;  // -1: no size to name
};

namespace detail {
extern const bool tool_attached;
void push(const char* message);
void push(const Call& call, const Context& ctx);
void push(const Call& call, const char* phase);
void pop();
}  // namespace detail

// Whether ranges are recorded: the build has NVTX and a tool was attached at start-up.
inline bool enabled() noexcept { return detail::tool_attached; }

// One range from construction to destruction, on the calling thread.
class Range {
 public:
  explicit Range(const char* message) : pushed_(enabled()) {
    if (pushed_) detail::push(message);
  }
  explicit Range(const std::string& message) : Range(message.c_str()) {}
  Range(const Call& call, const Context& ctx) : pushed_(enabled()) {
    if (pushed_) detail::push(call, ctx);
  }
  Range(const Call& call, const char* phase) : pushed_(enabled()) {
    if (pushed_) detail::push(call, phase);
  }
  ~Range() {
    if (pushed_) detail::pop();
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  bool pushed_;
};

// Consecutive phases of one call as ranges, where they are not scopes of their own: next(phase)
// closes the open phase and opens "call: phase"; close() and the destructor close it.
class Phases {
 public:
  explicit Phases(const Call& call) : call_(call) {}
  ~Phases() { close(); }
  void next(const char* phase) {
    close();
    if (enabled()) {
      detail::push(call_, phase);
      open_ = true;
    }
  }
  void close() {
    if (open_) detail::pop();
    open_ = false;
  }
  Phases(const Phases&) = delete;
  Phases& operator=(const Phases&) = delete;

 private:
  Call call_;
  bool open_ = false;
};

}  // namespace trace
}  // namespace tessera
