// The mechanisms of the halo's peer paths (halo_transport.hpp: the peer-copy and peer-store
// transports are built on them).
//
// PeerCopy: the neighbours of a rank live on its node, and each message goes straight into the
// receiver's buffer, through memory the receiver exported once (CUDA IPC): packed there by the
// sender's own kernel between claim and publish (the peer-copy halo transport's). No host memory
// is touched
// (the staged path copies through it twice) and no host waits for another: the order is kept by
// flags on the GPUs.
//
// The order across the processes, exchange k (every rank of the context runs the same exchanges in
// the same order; the receive buffers alternate between two slots, k even and k odd), kept by flags
// in device memory (kernels::write_flag, wait_flag: stream memory operations, no SM, no host wait):
// each rank holds two counters per neighbour, written by that neighbour through a mapping, "copied
// into my slots" and "drained of my messages".
//   claim    the queue waits until each receiver has drained k - 1 exchanges (slot k % 2 last held
//            exchange k - 2); where every receiver also sends to this rank (a halo's neighbours
//            do), the wait is not queued: this rank's finish of exchange k - 1 waited for each
//            receiver's `copied` count k, which the receiver's queue wrote after its `drained`
//            count k - 1, each write after a system-wide fence;
//   publish  after the caller's writes into the receivers' slot k % 2: its `copied` counter at
//            each receiver becomes k + 1;
//   finish   the queue waits until each sender's `copied` counter here is at least k + 1;
//   drained  after the caller's unpack of slot k % 2: each sender's `drained` counter becomes k + 1.
// The hosts do not meet: a rank may run ahead of its neighbours by one exchange, never into a slot
// its neighbour still reads. Under the MPI watchdog each wait gives up, naming the neighbour, as
// the Jacobi step's peer-store waits do (device_wait_limit.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
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

class PeerCopy {
 public:
  // Collective over ctx (every rank calls it, in the same order as its other collectives). sends:
  // this rank's messages to other ranks (a halo has none to itself; their data unused); recvs: the
  // messages it
  // receives, data the place of each within slot 0 of `receive` (an allocation's start, from
  // kernels::allocate, of 2 x slot_bytes bytes: slot 1 follows slot 0). Returns null on every rank
  // where some rank cannot take the path (not the cuda backend, a neighbour on another node or on a
  // GPU this rank cannot map, one rank alone, no stream memory operations), with the reason in
  // *why_not.
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
  // The caller writes the messages into the receivers' slots itself (a pack straight into them,
  // kernels::pack_rectangles_to): claim() queues the wait until every
  // receiver has drained the current slot, places() is where each message of `sends` (make's order)
  // goes in it, and publish() tells the receivers once the caller's writes, queued after claim(),
  // are done.
  void claim();
  std::span<void* const> places() const { return places(slot()); }
  std::span<void* const> places(int slot) const { return places_[static_cast<std::size_t>(slot)]; }
  void publish();
  // The context's queue waits for every message into this rank's slot (the host does not wait).
  void finish();
  // After the unpack of slot() is queued: the slot may be written again; the next exchange begins.
  void drained();

  struct Peer;  // a neighbour: what it exported, what it receives from this rank

 private:
  PeerCopy() = default;

  Context ctx_;
  Communicator handshake_;  // a communicator of its own for making and closing
  std::vector<Peer> peers_;
  std::size_t slot_bytes_ = 0;
  char* receive_ = nullptr;
  std::uint64_t* flags_ = nullptr;  // backend memory: per neighbour i, [2i] copied, [2i + 1] drained
  std::uint64_t exchanges_ = 0;
  bool started_ = false;    // from claim until drained
  bool published_ = false;  // from publish until drained
  bool claim_implied_ = false;  // every receiver sends to this rank: finish orders the next claim
  std::array<std::vector<void*>, 2> places_;  // of each message of make's sends in its receiver's slot 0 and slot 1
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
  // It waits until this rank's GPU is idle (the work that wrote the fields, on whichever queue)
  // before any neighbour may store into them.
  // Returns null on every rank where some rank cannot take the path (not the cuda backend, one rank
  // alone, a neighbour on another node or on a GPU this rank cannot map, no stream memory
  // operations), with the reason in *why_not.
  static std::unique_ptr<PeerStores> make(const Context& ctx, const FieldLayout& layout, StencilForm shape,
                                          std::array<const void*, 2> origins, std::size_t element_bytes,
                                          std::string* why_not);
  // Waits until this rank's GPU is idle, then for each neighbour to unmap (a handshake).
  ~PeerStores();
  PeerStores(const PeerStores&) = delete;
  PeerStores& operator=(const PeerStores&) = delete;

  // Which of the two fields given to make `origin` is (0 or 1), and the copies of that field's frame.
  int field(const void* origin) const;
  const std::vector<Copy>& copies(int field) const { return copies_[static_cast<std::size_t>(field)]; }
  // Queues, on `queue`, the wait for the neighbours' last frame (nothing before the first): before
  // other work reads or writes the ghosts.
  void wait(const kernels::Queue& queue) const;
  // Queues, on `queue`, the next frame's signal (after the work before it: the stores of a frame
  // written by other kernels than the sweep's): this rank's flag at each neighbour becomes the
  // next frame's value; as stored().
  void signal(const kernels::Queue& queue);
  // The next frame's flags (kernels::stencil_2d_stored_frame): wait until each neighbour's flag here
  // is at the last frame's value, then set this rank's flag at each neighbour to the next; and
  // whether the frame's own thread blocks may poll them (every neighbour's GPU is another than this
  // rank's: a block polling a flag must not hold an SM its neighbour needs to set it). A sweep
  // queued with them calls stored() after.
  kernels::FrameFlags flags() const;
  bool flags_polled() const { return others_only_; }
  void stored() { ++frames_; }

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
