#include "halo_transport.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "halo_peer_copy.hpp"
#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::detail {

HaloPath requested_halo_path(const Context& ctx) {
  const char* env = std::getenv("TESSERA_HALO");
  const std::string text = env ? env : "";
  int path = -1;  // unknown
  if (text.empty() || text == "auto") path = static_cast<int>(HaloPath::automatic);
  else if (text == "peer-copy") path = static_cast<int>(HaloPath::peer_copy);
  else if (text == "device-comm") path = static_cast<int>(HaloPath::device_comm);
  else if (text == "peer-store") path = static_cast<int>(HaloPath::peer_store);
  const int lowest = ctx.comm().allreduce(path, ReduceOp::min), highest = ctx.comm().allreduce(path, ReduceOp::max);
  constexpr const char* kValues = "auto, peer-copy, device-comm or peer-store";
  if (path < 0) throw UsageError("TESSERA_HALO: '" + text + "' is not " + kValues);
  if (lowest < 0) throw UsageError(std::string("TESSERA_HALO: another rank has a value that is not ") + kValues);
  if (lowest != highest) throw UsageError("TESSERA_HALO differs between the ranks; set it alike on every rank");
  return static_cast<HaloPath>(path);
}

// ---- the interface ---------------------------------------------------------------------------------

HaloTransport::HaloTransport(const Context& ctx, const HaloGeometry& g, std::span<const std::size_t> element_bytes)
    : ctx_(ctx), element_bytes_(element_bytes.begin(), element_bytes.end()) {
  for (const HaloMessage& m : g.sends) sends_.insert(sends_.end(), m.rectangles.begin(), m.rectangles.end());
  for (const std::size_t bytes : element_bytes_)
    bytes_sent_ += static_cast<double>(g.cells_sent_to_others) * static_cast<double>(bytes);
}

void HaloTransport::start(std::span<void* const> origins) {
  const std::span<const HaloPlace> places = claim(origins);
  pack(origins, places);
  publish(origins);
}

void HaloTransport::published_by_kernel() { TESSERA_ASSERT(false, "published_by_kernel: not the peer-store path"); }

void HaloTransport::pack(std::span<void* const> origins, std::span<const HaloPlace> places) const {
  TESSERA_ASSERT(origins.size() == fields() && places.size() == fields() * sends_.size(),
                 "halo transport: a pack of another count of fields or places");
  const kernels::Queue& q = ctx_.queue();
  std::vector<kernels::Rectangle> packed, strided;
  std::vector<void*> to;
  std::vector<HaloPlace> strided_to;
  for (std::size_t f = 0; f < fields(); ++f) {
    const std::size_t bytes = element_bytes_[f];
    char* const origin = static_cast<char*>(origins[f]);
    packed.clear();
    to.clear();
    strided.clear();
    strided_to.clear();
    for (std::size_t i = 0; i < sends_.size(); ++i) {
      const kernels::Rectangle& r = sends_[i];
      const HaloPlace& p = places[f * sends_.size() + i];
      if (r.size() == 0) continue;
      if (lies_at(p, r, origin, bytes)) continue;  // sent from where it lies
      if (p.ld == r.cols || r.rows * r.planes == 1) {  // row after row, or one row
        packed.push_back(r);
        to.push_back(p.to);
      } else {  // into another array's rows (peer-store: a neighbour's ghost cells)
        strided.push_back(r);
        strided_to.push_back(p);
      }
    }
    if (!packed.empty()) kernels::pack_rectangles_to(q, origin, packed, to, bytes);
    if (!strided.empty()) store_strided(origin, strided, strided_to, bytes);
  }
}

void HaloTransport::store_strided(const void*, std::span<const kernels::Rectangle>, std::span<const HaloPlace>,
                                  std::size_t) const {
  TESSERA_ASSERT(false, "halo transport: a place with rows of its own on a path that packs");
}

namespace {

// Calls place(at, r) for each rectangle of a message packed from `at` (null: every place null),
// one after another, each row-major; returns where the next message would start.
template <class Place>
char* each_packed(char* at, const std::vector<kernels::Rectangle>& rectangles, std::size_t element_bytes, Place place) {
  for (const kernels::Rectangle& r : rectangles) {
    place(at, r);
    if (at) at += static_cast<std::size_t>(r.size()) * element_bytes;
  }
  return at;
}

// A message that is one row of the block (or one contiguous run): sent from and received into the
// block itself on the device path.
bool contiguous(const HaloMessage& m) {
  if (m.rectangles.size() != 1) return false;
  const kernels::Rectangle& r = m.rectangles.front();
  return r.planes * r.rows <= 1;
}

// ---- device-comm ----------------------------------------------------------------------------------

class DeviceCommHalo final : public HaloTransport {
 public:
  DeviceCommHalo(const Context& ctx, const HaloGeometry& g, std::span<const std::size_t> element_bytes)
      : HaloTransport(ctx, g, element_bytes), comm_(ctx) {
    const int me = ctx.rank();
    // Field after field, message after message: each packed one's offset in its buffer, on a
    // 16-byte boundary (the paths copy faster from and to there: exchange.hpp), or -1 where it is
    // straight (sent from, or received into, the block itself).
    std::size_t send_at = 0, recv_at = 0;
    std::vector<std::ptrdiff_t> send_place, recv_place;
    auto slot = [](std::size_t& at, std::size_t size) {
      const std::size_t start = (at + 15) / 16 * 16;
      at = start + size;
      return static_cast<std::ptrdiff_t>(start);
    };
    for (std::size_t f = 0; f < fields(); ++f) {
      const std::size_t bytes = element_bytes[f];
      for (const HaloMessage& m : g.sends) {
        const std::size_t size = static_cast<std::size_t>(m.cells) * bytes;
        send_place.push_back(contiguous(m) ? -1 : slot(send_at, size));
        sends_msgs_.push_back({m.peer, nullptr, size});
        if (m.peer != me) staging_.send_bytes += size;
      }
      for (const HaloMessage& m : g.receives) {
        const std::size_t size = static_cast<std::size_t>(m.cells) * bytes;
        const bool straight = contiguous(m);
        if (straight) straight_recvs_.push_back({recvs_msgs_.size(), f, m.rectangles.front().offset, 0});
        else if (f == 0) recv_packed_.insert(recv_packed_.end(), m.rectangles.begin(), m.rectangles.end());
        recv_place.push_back(straight ? -1 : slot(recv_at, size));
        recvs_msgs_.push_back({m.peer, nullptr, size});
        if (m.peer != me) staging_.recv_bytes += size;
      }
    }
    const kernels::Queue& q = ctx.queue();
    const bool staged = comm_.path() == DeviceCommPath::staged && ctx.size() > 1;
    allocate_halo_buffers(
        ctx,
        [&] {
          if (send_at) send_buffer_ = static_cast<char*>(kernels::allocate(q, send_at));
          if (recv_at) recv_buffer_ = static_cast<char*>(kernels::allocate(q, recv_at));
          if (staged) {
            staging_.send = kernels::allocate_pinned_host(staging_.send_bytes);
            staging_.recv = kernels::allocate_pinned_host(staging_.recv_bytes);
          }
        },
        [&] { release(); });
    // Where each packed receive rectangle lies, per field: in its message's slot, after the
    // rectangles before it.
    recv_places_.resize(fields());
    std::size_t message = 0;
    for (std::size_t f = 0; f < fields(); ++f)
      for (const HaloMessage& m : g.receives) {
        if (recv_place[message] >= 0) {
          recvs_msgs_[message].data = recv_buffer_ + recv_place[message];
          each_packed(recv_buffer_ + recv_place[message], m.rectangles, element_bytes[f],
                      [&](char* at, const kernels::Rectangle&) { recv_places_[f].push_back(at); });
        }
        ++message;
      }
    // The place of every send rectangle: in its message's slot of the send buffer; a straight
    // message's (one rectangle) is set at claim, in the block.
    message = 0;
    for (std::size_t f = 0; f < fields(); ++f)
      for (const HaloMessage& m : g.sends) {
        char* at = nullptr;
        if (send_place[message] < 0) {
          straight_sends_.push_back({message, f, m.rectangles.front().offset, places_.size()});
        } else {
          at = send_buffer_ + send_place[message];
          sends_msgs_[message].data = at;
        }
        ++message;
        each_packed(at, m.rectangles, element_bytes[f],
                    [&](char* p, const kernels::Rectangle& r) { places_.push_back({p, r.cols}); });
      }
  }

  ~DeviceCommHalo() override {
    pending_.reset();  // waits for a transfer still in flight before its buffers go
    release();
  }

  const char* path() const override { return to_string(comm_.path()); }

  std::span<const HaloPlace> claim(std::span<void* const> origins) override {
    TESSERA_ASSERT(!pending_, "halo transport: an exchange was claimed before the last one finished");
    TESSERA_ASSERT(origins.size() == fields(), "halo transport: another count of fields");
    for (const Straight& s : straight_sends_)
      places_[s.place] = {at(origins, s), sends_[s.place % sends_.size()].ld};
    return places_;
  }

  void publish(std::span<void* const> origins) override {
    TESSERA_ASSERT(!pending_, "halo transport: an exchange was published before the last one finished");
    for (const Straight& s : straight_sends_) sends_msgs_[s.message].data = at(origins, s);
    for (const Straight& s : straight_recvs_) recvs_msgs_[s.message].data = at(origins, s);
    const bool staged = staging_.send != nullptr || staging_.recv != nullptr;
    pending_.emplace(comm_.ineighbor_exchange(sends_msgs_, recvs_msgs_, staged ? &staging_ : nullptr));
  }

  void finish(std::span<void* const> origins) override {
    TESSERA_ASSERT(pending_.has_value(), "halo transport: finish without publish");
    pending_->wait();
    pending_.reset();
    if (recv_packed_.empty()) return;
    for (std::size_t f = 0; f < fields(); ++f)
      kernels::unpack_rectangles_from(ctx_.queue(), recv_places_[f], recv_packed_, origins[f], element_bytes_[f]);
  }

 private:
  struct Straight {
    std::size_t message;  // among sends_msgs_ or recvs_msgs_
    std::size_t field;
    index_t offset;     // of its rectangle, in elements from the field's origin
    std::size_t place;  // its rectangle's among places_ (sends)
  };

  char* at(std::span<void* const> origins, const Straight& s) const {
    return static_cast<char*>(origins[s.field]) + s.offset * static_cast<index_t>(element_bytes_[s.field]);
  }

  void release() {
    const kernels::Queue& q = ctx_.queue();
    if (send_buffer_) kernels::deallocate(q, send_buffer_);
    if (recv_buffer_) kernels::deallocate(q, recv_buffer_);
    send_buffer_ = recv_buffer_ = nullptr;
    kernels::deallocate_pinned_host(staging_.send);
    kernels::deallocate_pinned_host(staging_.recv);
    staging_.send = staging_.recv = nullptr;
  }

  DeviceComm comm_;
  std::vector<DeviceComm::Message> sends_msgs_, recvs_msgs_;  // every field's, field after field
  std::vector<Straight> straight_sends_, straight_recvs_;
  std::vector<kernels::Rectangle> recv_packed_;  // one field's packed receive rectangles, in order
  std::vector<std::vector<void*>> recv_places_;  // per field, where each of them lies
  std::vector<HaloPlace> places_;                // every field's send rectangles'
  char* send_buffer_ = nullptr;
  char* recv_buffer_ = nullptr;
  DeviceComm::Staging staging_;
  std::optional<DeviceComm::Request> pending_;
};

// ---- peer-copy ------------------------------------------------------------------------------------

// Every field's messages to other ranks packed straight into the receivers' slots (PeerCopy: one
// kernel and two flags on the queue, no copy of its own, which beside a sweep that holds every SM
// costs about as long as the kernel), unpacked from this rank's slot; a message of a rank to itself
// (along a periodic axis it spans alone) packed into a buffer of this rank's and unpacked from it.
class PeerCopyHalo final : public HaloTransport {
 public:
  // Collective over ctx; null where a rank cannot take the path (the reason in *why_not).
  static std::unique_ptr<PeerCopyHalo> make(const Context& ctx, const HaloGeometry& g,
                                            std::span<const std::size_t> element_bytes, std::string* why_not) {
    std::unique_ptr<PeerCopyHalo> h(new PeerCopyHalo(ctx, g, element_bytes));
    const int me = ctx.rank();
    std::vector<DeviceComm::Message> sends;  // their places in the receivers' slots come from PeerCopy
    struct Planned {
      int peer;
      std::size_t at, bytes;
    };
    std::vector<Planned> recvs;
    std::size_t self_bytes = 0, recv_bytes = 0;
    for (std::size_t f = 0; f < h->fields(); ++f) {
      const std::size_t bytes = element_bytes[f];
      // Each field's messages from a 16-byte boundary (fields of several cell sizes: the pack and
      // unpack move whole words of the widest size the places allow).
      recv_bytes = (recv_bytes + 15) / 16 * 16;
      self_bytes = (self_bytes + 15) / 16 * 16;
      h->recv_field_at_.push_back(recv_bytes);
      h->self_field_at_.push_back(self_bytes);
      for (const HaloMessage& m : g.sends) {
        const std::size_t size = static_cast<std::size_t>(m.cells) * bytes;
        if (m.peer == me) self_bytes += size;
        else sends.push_back({m.peer, nullptr, size});
      }
      for (const HaloMessage& m : g.receives) {
        if (m.peer == me) continue;
        const std::size_t size = static_cast<std::size_t>(m.cells) * bytes;
        recvs.push_back({m.peer, recv_bytes, size});
        recv_bytes += size;
      }
    }
    for (const HaloMessage& m : g.receives) {
      std::vector<kernels::Rectangle>& list = m.peer == me ? h->self_rectangles_ : h->recv_rectangles_;
      list.insert(list.end(), m.rectangles.begin(), m.rectangles.end());
    }
    h->slot_bytes_ = (recv_bytes + 255) / 256 * 256;  // slot 1 on a 256-byte boundary, as slot 0 is
    allocate_halo_buffers(
        ctx,
        [&] {
          if (self_bytes) h->self_ = static_cast<char*>(kernels::allocate(ctx.queue(), self_bytes));
          if (recv_bytes) h->receive_ = static_cast<char*>(kernels::allocate(ctx.queue(), 2 * h->slot_bytes_));
        },
        [] {});  // h's destructor frees them
    std::vector<DeviceComm::Message> receives;
    for (const Planned& p : recvs) receives.push_back({p.peer, h->receive_ + p.at, p.bytes});
    h->peer_ = PeerCopy::make(ctx, sends, receives, h->receive_, h->slot_bytes_, why_not);
    if (!h->peer_) return nullptr;
    // Where each rectangle goes, in either slot: its message's place, after the rectangles before it.
    for (int slot = 0; slot < 2; ++slot) {
      const std::span<void* const> places = h->peer_->places(slot);
      std::vector<HaloPlace>& to = h->places_[static_cast<std::size_t>(slot)];
      std::size_t message = 0;
      for (std::size_t f = 0; f < h->fields(); ++f) {
        char* self = h->self_ ? h->self_ + h->self_field_at_[f] : nullptr;
        for (const HaloMessage& m : g.sends) {
          char* at = m.peer == me ? self : static_cast<char*>(places[message++]);
          at = each_packed(at, m.rectangles, element_bytes[f],
                           [&](char* p, const kernels::Rectangle& r) { to.push_back({p, r.cols}); });
          if (m.peer == me) self = at;
        }
      }
    }
    return h;
  }

  ~PeerCopyHalo() override {
    peer_.reset();  // waits for this rank's queue, then for the neighbours to unmap the slots
    if (self_) kernels::deallocate(ctx_.queue(), self_);
    if (receive_) kernels::deallocate(ctx_.queue(), receive_);
  }

  const char* path() const override { return "peer-copy"; }

  std::span<const HaloPlace> claim(std::span<void* const> origins) override {
    TESSERA_ASSERT(origins.size() == fields(), "halo transport: another count of fields");
    peer_->claim();
    return places_[static_cast<std::size_t>(peer_->slot())];
  }

  void publish(std::span<void* const>) override {
    TESSERA_COLLECTIVE(Collective::neighbor_exchange, bytes_sent_);
    peer_->publish();
  }

  void finish(std::span<void* const> origins) override {
    peer_->finish();
    const kernels::Queue& q = ctx_.queue();
    const char* slot = receive_ + static_cast<std::size_t>(peer_->slot()) * slot_bytes_;
    for (std::size_t f = 0; f < fields(); ++f) {
      if (!recv_rectangles_.empty())
        kernels::unpack_rectangles(q, slot + recv_field_at_[f], recv_rectangles_, origins[f], element_bytes_[f]);
      if (!self_rectangles_.empty())
        kernels::unpack_rectangles(q, self_ + self_field_at_[f], self_rectangles_, origins[f], element_bytes_[f]);
    }
  }

  void drained() override { peer_->drained(); }

 private:
  PeerCopyHalo(const Context& ctx, const HaloGeometry& g, std::span<const std::size_t> element_bytes)
      : HaloTransport(ctx, g, element_bytes) {}

  std::vector<kernels::Rectangle> recv_rectangles_, self_rectangles_;  // one field's, in order
  std::vector<std::size_t> recv_field_at_, self_field_at_;             // each field's in the slot, in self_
  std::array<std::vector<HaloPlace>, 2> places_;                       // per slot, every field's send rectangles'
  char* self_ = nullptr;     // the messages to this rank, packed
  char* receive_ = nullptr;  // two slots of slot_bytes_
  std::size_t slot_bytes_ = 0;
  std::unique_ptr<PeerCopy> peer_;
};

// ---- peer-store ----------------------------------------------------------------------------------

// One field of two that alternate, its cells stored straight into the neighbours' ghost cells
// (PeerStores: flags order the ranks, halo_peer_copy.hpp).
class PeerStoreHalo final : public HaloTransport {
 public:
  static std::unique_ptr<PeerStoreHalo> make(const Context& ctx, const HaloTransportSpec& spec, std::string* why_not) {
    TESSERA_ASSERT(spec.plane && spec.element_bytes.size() == 1 && spec.alternating[0] && spec.alternating[1],
                   "peer store: made without the 2-D layout or the two fields");
    std::unique_ptr<PeerStoreHalo> h(new PeerStoreHalo(ctx, *spec.geometry, spec.element_bytes));
    index_t cells = 0;  // of the rectangles of several rows: the scratch of store_strided
    for (const kernels::Rectangle& r : h->sends_)
      if (r.rows * r.planes > 1) cells += r.size();
    if (ctx.backend() == Backend::cuda && ctx.size() > 1)
      allocate_halo_buffers(
          ctx,
          [&] {
            if (cells) h->scratch_ = kernels::allocate(ctx.queue(), static_cast<std::size_t>(cells) * spec.element_bytes[0]);
          },
          [] {});  // h's destructor frees it
    h->stores_ = PeerStores::make(ctx, *spec.plane, spec.shape, spec.alternating, spec.element_bytes[0], why_not);
    if (!h->stores_) return nullptr;
    // Each send rectangle's place in the neighbour's field of the same index: PeerStores lists its
    // copies in grid order, one per neighbour, as the geometry lists the sends (two neighbours may
    // take the same rectangle: a block thinner than the ghost width).
    for (int f = 0; f < 2; ++f) {
      const auto& copies = h->stores_->copies(f);
      TESSERA_ASSERT(copies.size() == h->sends_.size(), "peer store: another count of copies than of sends");
      std::vector<HaloPlace>& to = h->places_[static_cast<std::size_t>(f)];
      for (std::size_t i = 0; i < copies.size(); ++i) {
        const kernels::Rectangle& r = h->sends_[i];
        TESSERA_ASSERT(copies[i].from.offset == r.offset && copies[i].from.rows == r.rows && copies[i].from.cols == r.cols,
                       "peer store: a copy of another rectangle than the send's");
        to.push_back({copies[i].to, copies[i].to_ld});
      }
    }
    return h;
  }

  ~PeerStoreHalo() override {
    stores_.reset();  // waits for this rank's queue, then for the neighbours to unmap its fields
    if (scratch_) kernels::deallocate(ctx_.queue(), scratch_);
  }

  const char* path() const override { return "peer-store"; }

  // The wait for the neighbours' last exchange, unless this queue's finish of it waited for the
  // same flags already (a finish waits for what the next claim would).
  std::span<const HaloPlace> claim(std::span<void* const> origins) override {
    TESSERA_ASSERT(origins.size() == 1, "peer store: one field");
    if (!finished_) stores_->wait(ctx_.queue());
    finished_ = false;
    return places_[static_cast<std::size_t>(stores_->field(origins[0]))];
  }

  void publish(std::span<void* const>) override {
    TESSERA_COLLECTIVE(Collective::neighbor_exchange, bytes_sent_);
    stores_->signal(ctx_.queue());
  }

  // The neighbours' stores of this exchange are in: they signalled it.
  void finish(std::span<void* const>) override {
    stores_->wait(ctx_.queue());
    finished_ = true;
  }

  // Rectangles of several rows into the neighbours' ghost cells (the ghost columns): packed into a
  // scratch buffer by one kernel, then each unpacked into its place (copy engines take such narrow
  // rows one at a time).
  void store_strided(const void* origin, std::span<const kernels::Rectangle> rectangles, std::span<const HaloPlace> places,
                     std::size_t bytes) const override {
    const kernels::Queue& q = ctx_.queue();
    kernels::pack_rectangles(q, origin, rectangles, scratch_, bytes);
    const char* at = static_cast<const char*>(scratch_);
    for (std::size_t i = 0; i < rectangles.size(); ++i) {
      const kernels::Rectangle& r = rectangles[i];
      TESSERA_ASSERT(r.planes == 1, "peer store: a box of several planes");
      const kernels::Rectangle into{0, places[i].ld, r.rows, r.cols};
      kernels::unpack_rectangles(q, at, std::span(&into, 1), places[i].to, bytes);
      at += static_cast<std::size_t>(r.size()) * bytes;
    }
  }

  PeerStores* stores() override { return stores_.get(); }
  void settle(const kernels::Queue& queue) const override {
    if (!finished_) stores_->wait(queue);
  }
  void published_by_kernel() override {
    TESSERA_COLLECTIVE(Collective::neighbor_exchange, bytes_sent_);
    stores_->stored();
    finished_ = false;  // the kernel's queues waited; this one has not
  }

 private:
  PeerStoreHalo(const Context& ctx, const HaloGeometry& g, std::span<const std::size_t> element_bytes)
      : HaloTransport(ctx, g, element_bytes) {}

  void* scratch_ = nullptr;
  std::unique_ptr<PeerStores> stores_;
  std::array<std::vector<HaloPlace>, 2> places_;  // per field of the two
  bool finished_ = false;  // the last exchange's finish is on this queue, after its flags' wait
};

}  // namespace

// ---- the policy ------------------------------------------------------------------------------------

std::unique_ptr<HaloTransport> make_halo_transport(const Context& ctx, const HaloTransportSpec& spec) {
  TESSERA_ASSERT(spec.geometry && !spec.element_bytes.empty(), "make_halo_transport: no geometry or no field");
  const HaloPath requested = requested_halo_path(ctx);  // collective
  if (ctx.size() > 1 && requested != HaloPath::device_comm) {
    const bool cuda = ctx.backend() == Backend::cuda;
    std::string why_not;
    if (spec.use == HaloUse::frame && (requested == HaloPath::peer_store || (requested == HaloPath::automatic && cuda))) {
      if (auto h = PeerStoreHalo::make(ctx, spec, &why_not)) return h;
      if (requested == HaloPath::peer_store)
        throw UsageError("TESSERA_HALO=peer-store: the halo cannot store into the neighbours' ghost cells: " + why_not);
    }
    // Past the frame's own path, peer-store asks for what auto does.
    bool copy = requested == HaloPath::peer_copy;
    if (!copy && cuda) copy = spec.use == HaloUse::field || DeviceComm(ctx).path() == DeviceCommPath::staged;
    if (copy) {
      if (auto h = PeerCopyHalo::make(ctx, *spec.geometry, spec.element_bytes, &why_not)) return h;
      if (requested == HaloPath::peer_copy)
        throw UsageError("TESSERA_HALO=peer-copy: the halo exchange cannot copy between the ranks' GPUs: " + why_not);
    }
  }
  return std::make_unique<DeviceCommHalo>(ctx, *spec.geometry, spec.element_bytes);
}

}  // namespace tessera::detail
