#include "tessera/framework/runtime.hpp"

#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "temporary_file.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/mpi_watchdog.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera {
namespace {

// Under MPI a fatal error on one rank ends every rank: MPI_Abort, not exit, so that ranks blocked
// in a collective with this one are torn down by the launcher instead of waiting forever.
void abort_job(const char* file, int line, const char* call, const char* what) {
  detail::remove_temporary_file();  // an output being written is never left behind half done
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  int rank = -1;
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  std::fprintf(stderr, "tessera: rank %d on %s: fatal error at %s:%d: %s: %s\n", rank, host, file, line, call,
               what);
  std::fflush(stderr);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 70);
  std::abort();
}

// This rank's affinity mask, one bit per core (bit c of byte c / 8: core c), at least min_bytes
// long; empty where the kernel will not say.
std::vector<unsigned char> affinity_mask(std::size_t min_bytes) {
  for (std::size_t bytes = std::max(min_bytes, sizeof(cpu_set_t)); bytes <= (std::size_t(1) << 20); bytes *= 2) {
    std::vector<unsigned char> mask(bytes, 0);
    if (sched_getaffinity(0, bytes, reinterpret_cast<cpu_set_t*>(mask.data())) == 0) return mask;
    if (errno != EINVAL) break;  // EINVAL: the machine has more cores than `bytes` can name
  }
  return {};
}

int count_cores(const std::vector<unsigned char>& mask) {
  int cores = 0;
  for (unsigned char byte : mask) cores += std::popcount(byte);
  return cores;
}

}  // namespace

int default_cpu_threads(int mask_cores, int node_cores, int ranks_on_node) {
  return std::max(1, std::min(mask_cores, node_cores / std::max(1, ranks_on_node)));
}

BackendChoice parse_backend_choice(std::string_view text) {
  if (text == "auto") return BackendChoice::automatic;
  if (text == "cpu") return BackendChoice::cpu;
  if (text == "cuda") return BackendChoice::cuda;
  throw UsageError("--backend: unknown backend '" + std::string(text) + "' (expected auto, cuda or cpu)");
}

Runtime::Runtime(int& argc, char**& argv) {
  set_fatal_handler(&abort_job);
  int initialized = 0;
  TESSERA_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    TESSERA_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
  }
  join();
}

Runtime::Runtime(MPI_Comm comm) : comm_(comm), owns_mpi_(false) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) throw UsageError("tessera: MPI is not initialised (or already finalised)");
  if (comm == MPI_COMM_NULL) throw UsageError("tessera: the null communicator has no ranks to run on");
  set_fatal_handler(&abort_job);
  join();
}

void Runtime::join() {
  TESSERA_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  detail::start_mpi_watchdog();
  TESSERA_MPI_CHECK(MPI_Comm_rank(comm_, &world_rank_));
  TESSERA_MPI_CHECK(MPI_Comm_size(comm_, &world_size_));

  // A malformed TESSERA_INJECT_FAULT would silently inject nothing: the job does not start.
  const std::string fault_error = detail::check_fault_injection(world_size_);
  int first_bad = fault_error.empty() ? world_size_ : world_rank_;
  TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm_));
  if (first_bad < world_size_) {
    if (!owns_mpi_) {
      char text[512] = {};
      if (world_rank_ == first_bad) std::snprintf(text, sizeof text, "%s", fault_error.c_str());
      TESSERA_MPI_CHECK(MPI_Bcast(text, sizeof text, MPI_CHAR, first_bad, comm_));
      throw UsageError(std::string("tessera: ") + text);
    }
    if (world_rank_ == first_bad) {
      std::fprintf(stderr, "tessera: %s\n", fault_error.c_str());
      std::fflush(stderr);
    }
    MPI_Finalize();
    std::exit(2);
  }

  MPI_Comm node = MPI_COMM_NULL;
  TESSERA_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL, &node));
  TESSERA_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
  TESSERA_MPI_CHECK(MPI_Comm_size(node, &local_size_));

  // The cores this rank may run on, and those of all ranks of its node (the union of their masks):
  // start() divides the node's cores among its ranks from these.
  std::vector<unsigned char> mask = affinity_mask(0);
  if (mask.empty()) {
    // No mask to be had: every online core, as an unbound rank would have.
    const long online = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    mask.assign(static_cast<std::size_t>(online + 7) / 8, 0);
    for (long c = 0; c < online; ++c) mask[static_cast<std::size_t>(c / 8)] |= static_cast<unsigned char>(1u << (c % 8));
  }
  int bytes = static_cast<int>(mask.size());
  TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_INT, MPI_MAX, node));
  mask.resize(static_cast<std::size_t>(bytes), 0);
  std::vector<unsigned char> node_mask(mask.size(), 0);
  TESSERA_MPI_CHECK(MPI_Allreduce(mask.data(), node_mask.data(), bytes, MPI_UNSIGNED_CHAR, MPI_BOR, node));
  mask_cores_ = std::max(1, count_cores(mask));
  node_cores_ = std::max(1, count_cores(node_mask));
  TESSERA_MPI_CHECK(MPI_Comm_free(&node));
  int leader = local_rank_ == 0 ? 1 : 0;
  TESSERA_MPI_CHECK(MPI_Allreduce(&leader, &nodes_, 1, MPI_INT, MPI_SUM, comm_));

  constexpr int kHost = 256;
  char host[kHost] = {};
  gethostname(host, kHost - 1);
  hostname_ = host;
  std::vector<char> hosts(static_cast<std::size_t>(kHost) * static_cast<std::size_t>(world_size_), '\0');
  TESSERA_MPI_CHECK(MPI_Allgather(host, kHost, MPI_CHAR, hosts.data(), kHost, MPI_CHAR, comm_));
  for (int r = 0; r < world_size_; ++r) {
    const std::string name(hosts.data() + static_cast<std::size_t>(r) * kHost);
    if (std::find(hostnames_.begin(), hostnames_.end(), name) == hostnames_.end()) hostnames_.push_back(name);
  }
}

Runtime::~Runtime() {
  world_ = Context();
  kernels::destroy_queue(queue_);
  kernels::release_cached_memory();  // array blocks cached by kernels::allocate
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) {
    // Watched too: MPI_Finalize synchronises with the other ranks and would wait for a lost one.
    const detail::MpiCallWatch watch("MPI_Finalize()", __FILE__, __LINE__);
    MPI_Finalize();
  }
  // A joined runtime leaves the watchdog to whoever finalises MPI (another runtime may share it).
  if (owns_mpi_) detail::stop_mpi_watchdog();
}

Context Runtime::start(BackendChoice choice, int cpu_threads, int device) {
  choose_cpu_threads(cpu_threads);
  visible_devices_ = kernels::cuda_device_count();
  const int has_gpu = visible_devices_ > 0 ? 1 : 0;
  // The lowest rank without a GPU (world_size if every rank has one), agreed by all ranks.
  int first_without = has_gpu ? world_size_ : world_rank_;
  TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first_without, 1, MPI_INT, MPI_MIN, comm_));
  const bool all_have_gpu = first_without == world_size_;

  Backend backend = Backend::cpu;
  if (choice == BackendChoice::cuda) {
    if (!built_with_cuda())
      throw UsageError("--backend cuda: this build of Tessera has no CUDA support (reconfigure with CUDA enabled)");
    if (!all_have_gpu) {
      char where[256] = {};
      if (world_rank_ == first_without) std::snprintf(where, sizeof where, "%s", hostname_.c_str());
      TESSERA_MPI_CHECK(MPI_Bcast(where, sizeof where, MPI_CHAR, first_without, comm_));
      throw UsageError("--backend cuda: no usable GPU on rank " + std::to_string(first_without) + " (host " + where +
                       "); use --backend cpu or auto");
    }
    backend = Backend::cuda;
  } else if (choice == BackendChoice::automatic) {
    backend = all_have_gpu ? Backend::cuda : Backend::cpu;
  }

  if (backend == Backend::cuda) {
    // The lowest rank whose requested device it cannot see, agreed by all ranks.
    int first_bad = device < visible_devices_ ? world_size_ : world_rank_;
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm_));
    if (first_bad < world_size_) {
      int asked[2] = {device, visible_devices_};
      TESSERA_MPI_CHECK(MPI_Bcast(asked, 2, MPI_INT, first_bad, comm_));
      throw UsageError("device " + std::to_string(asked[0]) + " does not exist on rank " + std::to_string(first_bad) +
                       " (it sees " + std::to_string(asked[1]) + (asked[1] == 1 ? " device)" : " devices)"));
    }
    queue_ = kernels::make_cuda_queue(device >= 0 ? device : local_rank_ % visible_devices_);
  } else {
    queue_ = kernels::Queue{};
  }
  if (backend == Backend::cuda) count_gpus_in_use();
  Context world(Communicator::borrow(comm_), queue_, backend == Backend::cuda && gpus_in_use_ < world_size_);
  // A TESSERA_DEVICE_COMM that cannot be taken fails here, on every rank at once, rather than in
  // the first DeviceComm of each rank, between collectives.
  detail::agree_device_comm_path(world, detail::device_comm_facts(world));
  world_ = world;
  return world_;
}

Runtime::CpuThreads Runtime::plan_cpu_threads(int requested) const {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (requested > 0) return {requested, "--threads"};
  if (env && *env) return {omp_get_max_threads(), "OMP_NUM_THREADS"};  // OpenMP read it at start-up
  const int share = default_cpu_threads(mask_cores_, node_cores_, local_size_);
  return {share, mask_cores_ < node_cores_ && share == mask_cores_ ? "affinity mask" : "cores / ranks on the node"};
}

void Runtime::choose_cpu_threads(int requested) {
  const CpuThreads plan = plan_cpu_threads(requested);
  if (plan.chosen_by != "OMP_NUM_THREADS") omp_set_num_threads(plan.threads);
  cpu_threads_chosen_by_ = plan.chosen_by;
  cpu_threads_ = omp_get_max_threads();
  int range[2] = {-cpu_threads_, cpu_threads_};
  TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT, MPI_MAX, comm_));
  cpu_threads_min_ = -range[0];
  cpu_threads_max_ = range[1];
}

std::string Runtime::describe_cpu_threads() const {
  std::string s = cpu_threads_min_ == cpu_threads_max_ ? std::to_string(cpu_threads_)
                                                       : std::to_string(cpu_threads_min_) + "-" + std::to_string(cpu_threads_max_);
  s += cpu_threads_max_ == 1 ? " OpenMP thread per rank (" : " OpenMP threads per rank (";
  if (cpu_threads_chosen_by_ == "affinity mask")
    s += "the affinity mask of rank " + std::to_string(world_rank_) + ": " + std::to_string(mask_cores_) +
         (mask_cores_ == 1 ? " core" : " cores");
  else if (cpu_threads_chosen_by_ == "cores / ranks on the node")
    s += std::to_string(node_cores_) + (node_cores_ == 1 ? " core / " : " cores / ") + std::to_string(local_size_) +
         (local_size_ == 1 ? " rank on the node" : " ranks on the node");
  else
    s += cpu_threads_chosen_by_;
  return s + ")";
}

void Runtime::count_gpus_in_use() {
  // One record per rank: host name and the UUID of its device. Equal records mean a shared GPU.
  constexpr std::size_t kHost = 240, kRecord = kHost + 16;
  std::string mine(kRecord, '\0');
  std::copy_n(hostname_.begin(), std::min(hostname_.size(), kHost - 1), mine.begin());
  const auto uuid = kernels::device_uuid(queue_);
  std::copy(uuid.begin(), uuid.end(), mine.begin() + kHost);
  std::string all(kRecord * static_cast<std::size_t>(world_size_), '\0');
  TESSERA_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(kRecord), MPI_CHAR, all.data(),
                                  static_cast<int>(kRecord), MPI_CHAR, comm_));
  std::set<std::string> distinct;
  for (int r = 0; r < world_size_; ++r) distinct.insert(all.substr(static_cast<std::size_t>(r) * kRecord, kRecord));
  gpus_in_use_ = static_cast<int>(distinct.size());
}

std::string Runtime::describe() const {
  std::string s = std::to_string(world_size_) + (world_size_ == 1 ? " rank" : " ranks") + " on " +
                  std::to_string(nodes_) + (nodes_ == 1 ? " node" : " nodes") + ", backend " +
                  to_string(queue_.backend);
  if (queue_.backend == Backend::cpu && !cpu_threads_chosen_by_.empty()) s += ", " + describe_cpu_threads();
  if (queue_.backend == Backend::cuda)
    s += ", " + std::to_string(gpus_in_use_) + (gpus_in_use_ == 1 ? " GPU" : " GPUs") + ", rank 0 drives " +
         kernels::describe_device(queue_);
  return s;
}

}  // namespace tessera
