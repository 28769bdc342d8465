// How a halo's cells travel between the ranks: one interface (HaloTransport), three
// implementations, and one policy that picks among them (make_halo_transport). The halos built on
// it: a Field's exchange (exchange_halos, field.cpp), a HaloExchange (field_2d.cpp) and, through
// its HaloExchange, the Jacobi step (stencil.cpp).
//
// A halo exchange moves the cells of a block that other ranks' ghosts hold (the send rectangles,
// offsets from the block's origin, one message per neighbour) into those ghosts (the receive
// rectangles). A transport is made once for one halo (HaloGeometry: its rectangles per neighbour;
// the cell size of each field it moves) and runs once a step, its work queued on the queue of the
// context it was made with. Exchange k, for the fields at `origins` (one per field, in make's order):
//
//   claim(origins)    queues the wait until exchange k's cells may be written where they go, and
//                     returns that place for each send rectangle (field after field); the caller's
//                     kernels write each rectangle's cells there, row-major, rows `ld` apart (a pack,
//                     or a sweep that writes them as it computes them); a place that is the rectangle
//                     itself (same address and ld) needs no writing
//   publish(origins)  the cells written since claim, by work queued before, are exchange k's: they leave
//   finish(origins)   queues their arrival in the ghosts of each field (peer-copy, device-comm: the
//                     unpack from where they arrived)
//   drained()         after finish, once the work that follows it is queued: the places finish read
//                     from may take exchange k + 1 (peer-copy's receive slot)
//   start(origins)    claim, a pack of every rectangle to its place, publish
//
// The implementations:
//   device-comm  the places are a send buffer of this rank's (a message of one row is sent from the
//                block itself, and received straight into the ghosts: no pack, no unpack); publish
//                sends the messages with the context's DeviceComm (Transport::ineighbor_exchange:
//                mpi-host, cuda-aware-mpi, staged or nccl, transport.hpp), finish waits and unpacks
//   peer-copy    the places are the neighbours' receive slots, mapped here (PeerCopy,
//                halo_peer_copy.hpp: CUDA IPC); claim, publish and finish are flags in GPU memory,
//                with no host in between; finish unpacks from this rank's slot
//   peer-store   the places are the neighbours' ghost cells themselves, mapped here (PeerStores):
//                no message, no pack buffer, no unpack. It moves one of two fields given when it is
//                made (a solver's input and output), and relies on how a solver uses them: a
//                neighbour's exchange k + 1 stores once this rank has published exchange k, so the
//                exchanges alternate between the two fields (or repeat one whose sent cells are
//                unchanged), and the ghosts exchange k fills are read only by work queued on the
//                transport's queue (or ordered before it) before this rank's claim of exchange
//                k + 1 (the Jacobi step's frame reads them in the sweep that writes the next
//                exchange's cells). A kernel may wait for and set its flags itself, in place of
//                claim and publish (stores(), published_by_kernel()). Making it waits until this
//                rank's GPU is idle (the fields' contents written on any queue).
//
// The policy (TESSERA_HALO, the same on every rank: requested_halo_path), with what auto (or unset)
// takes under cuda for each use:
//   frame     a solver's halo whose frame is written by its own sweep (HaloExchange given the two
//             fields it alternates between: the Jacobi step): peer-store (the 2-D step hides 97% of
//             its exchange, PERFORMANCE.md), else as `exchange`;
//   field     a Field's exchange (exchange_halos): peer-copy (the overlapped 3-D step at 256^3 on
//             two H200s 46 us a step against NCCL's 62);
//   exchange  a HaloExchange: peer-copy only where the device path is staged (two H200s, 4096^2 a
//             rank, measured with a form of peer-copy that copied packed messages with the copy
//             engines: the exchange alone 24.4 us against NCCL's 12.6-12.8 in runs of 100, the
//             overlapped Jacobi iteration 48.3-48.7 against 47.3-47.4; staging through the host
//             takes several times either; the pack straight into the slots, `field`'s measured
//             form, is not measured on two GPUs for this use).
// TESSERA_HALO=peer-copy is tried for every use, peer-store for `frame` (elsewhere it means auto;
// `frame` goes on as auto would where peer-store cannot be made under auto), and a rank that
// cannot take the path asked for reports why, a UsageError on every rank (so peer-copy, or
// peer-store for `frame`, on the cpu backend with two or more ranks); device-comm never takes a
// peer path. One rank, or the cpu backend under auto, takes device-comm. A peer path's make agrees
// over the ranks and fails on all of them where some rank cannot take it (a neighbour on another
// node, no CUDA IPC, no stream memory operations), so that they fall back together.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "tessera/framework/context.hpp"
#include "tessera/framework/field.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::detail {

class PeerStores;

enum class HaloPath { automatic, peer_copy, device_comm, peer_store };
// What TESSERA_HALO asks for, the same on every rank of ctx: a UsageError otherwise (collective:
// ranks that went different ways would wait for each other in different calls).
HaloPath requested_halo_path(const Context& ctx);

enum class HaloUse { frame, field, exchange };

class HaloTransport {
 public:
  virtual ~HaloTransport() = default;
  HaloTransport(const HaloTransport&) = delete;
  HaloTransport& operator=(const HaloTransport&) = delete;

  // "peer-copy", "peer-store", or the DeviceComm path's name.
  virtual const char* path() const = 0;
  // The send rectangles of one field, every message's one after another (the order of the
  // geometry's sends), and the fields' count.
  std::span<const kernels::Rectangle> sends() const { return sends_; }
  std::size_t fields() const { return element_bytes_.size(); }
  // Bytes sent to other ranks per exchange, every field's.
  double bytes_sent() const { return bytes_sent_; }

  // The steps of one exchange (above); origins: one per field.
  virtual std::span<const HaloPlace> claim(std::span<void* const> origins) = 0;
  virtual void publish(std::span<void* const> origins) = 0;
  virtual void finish(std::span<void* const> origins) = 0;
  virtual void drained() {}
  void start(std::span<void* const> origins);
  // Whether `place` is rectangle r of the block at `origin` itself (nothing to write: the path
  // sends it from where it lies).
  static bool lies_at(const HaloPlace& place, const kernels::Rectangle& r, const void* origin, std::size_t element_bytes) {
    return place.to == static_cast<const char*>(origin) + r.offset * static_cast<index_t>(element_bytes) && place.ld == r.ld;
  }

  // The peer-store path's flags, for a kernel that waits for and sets them itself in place of
  // claim and publish (kernels::stencil_2d_stored_frame); null on the other paths. The caller calls
  // published_by_kernel() once that kernel is queued.
  virtual PeerStores* stores() { return nullptr; }
  virtual void published_by_kernel();
  // Queues on `queue` the wait for the neighbours' part of the last exchange where finish() did not
  // wait for it (peer-store, after a kernel published it: their stores land in this rank's ghosts
  // with nothing else waiting for them); nothing otherwise, the caller's queue being ordered after
  // the finish on the transport's queue. (Such a redundant wait on the field's queue took the
  // back-to-back Jacobi step from 0.39 to 2.45 ms: two ranks sharing one H200, 4096^2 a rank.)
  virtual void settle(const kernels::Queue&) const {}

 protected:
  HaloTransport(const Context& ctx, const HaloGeometry& g, std::span<const std::size_t> element_bytes);
  // A pack of every send rectangle of the fields to the places claim returned (start's middle);
  // places with rows of their own (ld not the rectangle's width) go to store_strided.
  void pack(std::span<void* const> origins, std::span<const HaloPlace> places) const;
  virtual void store_strided(const void* origin, std::span<const kernels::Rectangle> rectangles,
                             std::span<const HaloPlace> places, std::size_t element_bytes) const;

  Context ctx_;
  std::vector<std::size_t> element_bytes_;
  std::vector<kernels::Rectangle> sends_;
  double bytes_sent_ = 0;
};

// What a halo transport is made for. geometry: the messages of one field; element_bytes: one entry
// per field it moves. For `frame`: the 2-D layout and shape, and the two fields (one element size)
// that alternate; peer-store needs them.
struct HaloTransportSpec {
  const HaloGeometry* geometry = nullptr;
  std::vector<std::size_t> element_bytes;
  HaloUse use = HaloUse::field;
  const FieldLayout* plane = nullptr;
  StencilForm shape = StencilForm::star;
  std::array<const void*, 2> alternating{};
};

// The policy above. Collective over ctx (every rank calls it, in the same order as its other
// collectives); the transport's work goes on ctx's queue. A UsageError (on every rank) where
// TESSERA_HALO names a path that a rank cannot take.
std::unique_ptr<HaloTransport> make_halo_transport(const Context& ctx, const HaloTransportSpec& spec);

}  // namespace tessera::detail
