#include "tessera/framework/mpi_watchdog.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "tessera/kernels/error.hpp"

namespace tessera::detail {
namespace {

using Clock = std::chrono::steady_clock;

// The call in progress. `entered_ns` is 0 when no watched call is in progress; the text fields
// are written before it (release) and read after it (acquire).
std::atomic<bool> g_armed{false};
std::atomic<long long> g_entered_ns{0};
std::atomic<const char*> g_call{nullptr};
std::atomic<const char*> g_file{nullptr};
std::atomic<int> g_line{0};
std::atomic<int> g_peer{-1};

struct AbortHook {
  WatchdogAbortHook hook = nullptr;
  void* data = nullptr;
};
std::mutex g_hooks_mutex;
AbortHook g_hooks[64];
double g_timeout = 0;
int g_rank = -1;
char g_host[256] = "?";

std::mutex g_mutex;
std::condition_variable g_wake;
bool g_stop = false;
std::thread g_thread;

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

void watch() {
  // Check a few times per timeout, at least once a second.
  const auto period = std::chrono::duration<double>(std::min(1.0, g_timeout / 4));
  std::unique_lock<std::mutex> lock(g_mutex);
  while (!g_wake.wait_for(lock, period, [] { return g_stop; })) {
    const long long entered = g_entered_ns.load(std::memory_order_acquire);
    if (entered == 0) continue;
    const double waited = static_cast<double>(now_ns() - entered) * 1e-9;
    if (waited < g_timeout) continue;
    // Only this thread reads the fields here; the main thread is inside MPI and stays there.
    const int peer = g_peer.load(std::memory_order_acquire);
    char waiting_for[64] = "";
    if (peer >= 0) std::snprintf(waiting_for, sizeof waiting_for, " waiting for rank %d", peer);
    std::fprintf(stderr,
                 "tessera: rank %d on %s: MPI call not returned after %.0f s (TESSERA_MPI_TIMEOUT=%g): %s at %s:%d%s; "
                 "%s; ending this rank\n",
                 g_rank, g_host, waited, g_timeout, g_call.load(), g_file.load(), g_line.load(), waiting_for,
                 peer >= 0 ? "that rank (or its node) is lost or stuck" : "a rank or node of this job is lost or stuck");
    std::fflush(stderr);
    // NCCL communicators aborted, device waits for peers told to give up: nothing of this process
    // keeps polling for a peer that is gone while it ends. A hook that does not return within 5 s
    // does not keep the process alive: the bound stays the timeout plus 5 s.
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(5));
      std::_Exit(70);
    }).detach();
    {
      std::lock_guard<std::mutex> hooks(g_hooks_mutex);
      for (const AbortHook& h : g_hooks)
        if (h.hook) h.hook(h.data);
    }
    // Not MPI_Abort: only the main thread may call MPI (MPI_THREAD_FUNNELED), and it is stuck in
    // a call that may never return. The launcher sees this rank exit non-zero and ends the job.
    std::_Exit(70);
  }
}

}  // namespace

void start_mpi_watchdog() {
  const char* env = std::getenv("TESSERA_MPI_TIMEOUT");
  if (!env || !*env || g_thread.joinable()) return;
  char* end = nullptr;
  const double seconds = std::strtod(env, &end);
  if (end == env || *end != '\0' || !std::isfinite(seconds) || seconds < 0)
    ::tessera::fatal(__FILE__, __LINE__, "TESSERA_MPI_TIMEOUT",
                     std::string("'") + env + "' is not a number of seconds (0 or unset: no watchdog)");
  if (seconds == 0) return;
  g_timeout = seconds;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  gethostname(g_host, sizeof g_host - 1);
  g_stop = false;
  g_thread = std::thread(watch);
  g_armed.store(true, std::memory_order_release);
}

void stop_mpi_watchdog() {
  if (!g_thread.joinable()) return;
  g_armed.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_stop = true;
  }
  g_wake.notify_all();
  g_thread.join();
}

double mpi_watchdog_timeout() { return g_armed.load(std::memory_order_acquire) ? g_timeout : 0.0; }

void add_watchdog_abort_hook(WatchdogAbortHook hook, void* data) {
  std::lock_guard<std::mutex> lock(g_hooks_mutex);
  for (AbortHook& h : g_hooks)
    if (!h.hook) {
      h = {hook, data};
      return;
    }
  ::tessera::fatal(__FILE__, __LINE__, "add_watchdog_abort_hook", "more than 64 abort hooks");
}

void remove_watchdog_abort_hook(WatchdogAbortHook hook, void* data) {
  std::lock_guard<std::mutex> lock(g_hooks_mutex);
  for (AbortHook& h : g_hooks)
    if (h.hook == hook && h.data == data) h = {};
}

WaitingFor::WaitingFor(int peer) noexcept : previous_(g_peer.exchange(peer, std::memory_order_acq_rel)) {}
WaitingFor::~WaitingFor() { g_peer.store(previous_, std::memory_order_release); }

MpiCallWatch::MpiCallWatch(const char* call, const char* file, int line) noexcept {
  if (!g_armed.load(std::memory_order_relaxed)) return;
  watching_ = true;
  g_call.store(call, std::memory_order_relaxed);
  g_file.store(file, std::memory_order_relaxed);
  g_line.store(line, std::memory_order_relaxed);
  g_entered_ns.store(now_ns(), std::memory_order_release);
}

MpiCallWatch::~MpiCallWatch() {
  if (watching_) g_entered_ns.store(0, std::memory_order_release);
}

}  // namespace tessera::detail
