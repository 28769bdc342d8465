// The halo exchange's peer-copy path: the neighbours of a rank live on its node, and each message
// goes from the sender's packed buffer straight into the receiver's with the GPU's copy engines,
// through memory the receiver exported once (CUDA IPC). No SM moves data (NCCL's send/recv holds
// one for every transfer, beside the interior sweep the exchange overlaps) and no host memory is
// touched (the staged path copies through it twice).
//
// The order across the processes, exchange k (every rank of the context runs the same exchanges in
// the same order; the receive buffers alternate between two slots, k even and k odd):
//   start    the queue waits for each receiver's `drained` event (its unpack of k - 2 from this
//            slot), copies each message into the receiver's slot k % 2, records `copied`, and sends
//            every neighbour a zero-byte MPI message: "copied for k is recorded";
//   finish   receives that message from every neighbour, then the queue waits for each sender's
//            `copied` event; the caller unpacks slot k % 2, and `drained` is recorded after it.
// An event wait refers to the last record the host queued before it, so each wait must follow, on
// the host, the record it is for. The zero-byte messages give that: a rank's `copied` for k is
// recorded before its message for k, which its neighbour receives before waiting; and its `drained`
// for k - 2 is recorded (finish of k - 2) before its message for k - 1, which the neighbour receives
// (finish of k - 1) before its start of k waits for it. A later record only waits longer. With one
// slot, the start of k would need `drained` of k - 1, which nothing orders.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/framework/comm.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::detail {

// A halo exchange's buffers: allocate() takes them on this rank, then the ranks of ctx agree
// (collective), so that a rank out of memory leaves none waiting in the collectives that follow
// (PeerCopy::make's): where some rank could not, release() frees what this rank took, and every
// rank throws OutOfMemory naming the largest request that failed.
void allocate_halo_buffers(const Context& ctx, const std::function<void()>& allocate, const std::function<void()>& release);

// What TESSERA_HALO asks for (field_2d.hpp; peer-store: the Jacobi step's, stencil.hpp), the same on
// every rank of ctx: a UsageError otherwise (collective: ranks that went different ways would wait
// for each other in different calls).
enum class HaloPath { automatic, peer_copy, device_comm, peer_store };
HaloPath requested_halo_path(const Context& ctx);

class PeerCopy {
 public:
  // Collective over ctx (every rank calls it, in the same order as its other collectives). sends:
  // this rank's messages to other ranks (a halo has none to itself), data in device memory that
  // stays where it is; recvs: the messages it
  // receives, data the place of each within slot 0 of `receive` (an allocation's start, from
  // kernels::allocate, of 2 x slot_bytes bytes: slot 1 follows slot 0). Returns null on every rank
  // where some rank cannot take the path (not the cuda backend, a neighbour on another node or on a
  // GPU this rank cannot map, one rank alone), with the reason in *why_not.
  static std::unique_ptr<PeerCopy> make(const Context& ctx, const std::vector<DeviceComm::Message>& sends,
                                        const std::vector<DeviceComm::Message>& recvs, void* receive,
                                        std::size_t slot_bytes, std::string* why_not);

  // Waits until this rank's queue has done everything, then for each neighbour to stop using what
  // it mapped of this rank: a handshake with the neighbours, which all destroy theirs.
  ~PeerCopy();
  PeerCopy(const PeerCopy&) = delete;
  PeerCopy& operator=(const PeerCopy&) = delete;

  // The slot the current exchange receives into (0 or 1).
  int slot() const { return static_cast<int>(exchanges_ % 2); }
  // Queues the copies of every message into its receiver, after the work already on the context's
  // queue (the packing), and tells the neighbours.
  void start();
  // The context's queue waits for every message into this rank's slot (the host waits only for the
  // neighbours' start).
  void finish();
  // After the unpack of slot() is queued: the slot may be written again; the next exchange begins.
  void drained();

  struct Peer;  // a neighbour: what it exported, what it receives from this rank

 private:
  PeerCopy() = default;

  Context ctx_;
  Communicator tokens_;  // a communicator of its own, so that no other message matches the tokens
  std::vector<Peer> peers_;
  std::size_t slot_bytes_ = 0;
  char* receive_ = nullptr;
  void* copied_ = nullptr;  // cudaEvent_t, interprocess
  void* drained_ = nullptr;
  long long exchanges_ = 0;
  bool started_ = false;          // from start until drained
  bool awaiting_tokens_ = false;  // from start until finish: the neighbours' tokens not yet received
};

// The Jacobi step's peer-store path (stencil.cpp): the neighbours of a rank live on its node, and
// the sweep of the block's frame writes each cell that a neighbour's ghosts hold straight into that
// neighbour's field as it computes it, through memory the neighbour exported once (CUDA IPC): no
// message, no pack or unpack, and no SM beyond the frame's own (NCCL's send/recv takes a whole SM,
// which the interior sweep beside it leaves none of). The iteration's two fields alternate; each
// rank maps both of each neighbour's, and writes into the one of the same index as its own output.
// Flags in device memory (kernels::write_flag, wait_flag) order the ranks without their hosts; for
// the frames d = 0, 1, ... that store, in steps of kernels::kFrameFlagStep (s):
//   wait     the queue holds frame d until each neighbour's flag here is at least d s: the
//            neighbour's frame d - 1 is done, so its cells are in this rank's ghosts, and so is its
//            reading of its own ghosts of the field that this rank's frame d writes into (frame
//            d - 1 read them: the fields alternate);
//   signal   after frame d, this rank's flag at each neighbour becomes (d + 1) s (written at
//            once by the queue, or added up by the thread blocks of a frame-last sweep).
// Any other work that reads or writes the ghosts waits first (wait on its queue).
class PeerStores {
 public:
  // A rectangle of this rank's block (offset from its origin, ld the block's) and where its cells go
  // in a neighbour's field (mapped here) of the same index, with that field's ld; in elements.
  struct Copy {
    kernels::Rectangle from;
    void* to = nullptr;
    index_t to_ld = 0;
  };

  // Collective over ctx (the grid's ranks in grid order). origins: this rank's two fields of
  // `layout` (the Field2D origins of Jacobi's u and v), each in an allocation of kernels::allocate.
  // Returns null on every rank where some rank cannot take the path (not the cuda backend, one rank
  // alone, a neighbour on another node or on a GPU this rank cannot map, no stream memory
  // operations), with the reason in *why_not.
  static std::unique_ptr<PeerStores> make(const Context& ctx, const FieldLayout& layout, HaloShape shape,
                                          std::array<const void*, 2> origins, std::size_t element_bytes,
                                          std::string* why_not);
  // Waits until this rank's queue is idle, then for each neighbour to unmap (a handshake).
  ~PeerStores();
  PeerStores(const PeerStores&) = delete;
  PeerStores& operator=(const PeerStores&) = delete;

  // Which of the two fields given to make `origin` is (0 or 1), and the copies of that field's frame.
  int field(const void* origin) const;
  const std::vector<Copy>& copies(int field) const { return copies_[static_cast<std::size_t>(field)]; }
  // Queues, on `queue`, the wait for the neighbours' last frame (nothing before the first).
  void wait(const kernels::Queue& queue) const;
  // Queues, on `queue` after the frame, the flag of this frame at each neighbour.
  void signal(const kernels::Queue& queue);
  // The same wait and signal for the next frame, done by the frame's own thread blocks
  // (kernels::stencil_2d_frame_last), where every neighbour's GPU is another than this rank's (a
  // block polling a flag must not hold an SM its neighbour needs to set it); nullopt otherwise. A
  // sweep queued with them calls signalled() after.
  std::optional<kernels::FrameFlags> frame_flags() const;
  void signalled() { ++frames_; }

  struct Neighbour;

 private:
  PeerStores() = default;

  Context ctx_;
  Communicator handshake_;  // a communicator of its own for the closing handshake
  std::array<const void*, 2> origins_{};
  std::array<std::vector<Copy>, 2> copies_;
  std::vector<Neighbour> neighbours_;
  std::uint64_t* flags_ = nullptr;  // backend memory: one flag per neighbour, written by it
  std::uint64_t frames_ = 0;        // frames signalled so far
  bool others_only_ = false;        // every neighbour on a GPU other than this rank's
};

}  // namespace tessera::detail
