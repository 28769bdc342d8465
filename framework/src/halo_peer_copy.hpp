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

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tessera/framework/comm.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/device_comm.hpp"

namespace tessera::detail {

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

}  // namespace tessera::detail
