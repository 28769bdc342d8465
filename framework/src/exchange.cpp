// Exchange: the messages of one data movement, their packed slots, and the remedy for runs that
// start off a 16-byte boundary (algorithms/exchange.hpp).
#include "tessera/framework/algorithms/exchange.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {

namespace detail {
namespace {
// TESSERA_TEST_ALIGNED_EXCHANGE=1 (tests): every exchange takes the remedy, on any path; =0: none
// does (to measure what the remedy gains).
std::optional<bool> g_forced_aligned = [] {
  const char* env = std::getenv("TESSERA_TEST_ALIGNED_EXCHANGE");
  if (!env || (env[0] != '0' && env[0] != '1') || env[1] != '\0') return std::optional<bool>();
  return std::optional<bool>(env[0] == '1');
}();
}
void force_aligned_exchange(std::optional<bool> aligned) { g_forced_aligned = aligned; }
std::optional<bool> forced_aligned_exchange() { return g_forced_aligned; }
}  // namespace detail

namespace {

constexpr std::size_t kBoundary = 16;

std::size_t round_up(std::size_t bytes, std::size_t multiple) { return (bytes + multiple - 1) / multiple * multiple; }

std::size_t address_lead(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kBoundary; }

}  // namespace

Exchange::Exchange(const Context& ctx, ExchangePattern pattern, std::size_t packed_alignment)
    : ctx_(ctx), pattern_(pattern), packed_alignment_(std::max(packed_alignment, kBoundary)), comm_(ctx) {
  TESSERA_ASSERT(packed_alignment_ % kBoundary == 0, "Exchange: packed slots on a multiple of 16 bytes");
  aligned_ = detail::forced_aligned_exchange().value_or(comm_.prefers_aligned_messages());
  if (detail::forced_aligned_exchange() == std::optional<bool>(true)) aligned_from_bytes_ = 0;
}

Exchange::~Exchange() { release(); }

Exchange::Exchange(Exchange&& o) noexcept
    : ctx_(std::move(o.ctx_)),
      pattern_(o.pattern_),
      packed_alignment_(o.packed_alignment_),
      comm_(o.comm_),
      aligned_(o.aligned_),
      aligned_from_bytes_(o.aligned_from_bytes_),
      prepared_(o.prepared_),
      sends_(std::move(o.sends_)),
      recvs_(std::move(o.recvs_)),
      packed_sends_(std::move(o.packed_sends_)),
      packed_recvs_(std::move(o.packed_recvs_)),
      bytes_to_others_(o.bytes_to_others_),
      bytes_to_self_(o.bytes_to_self_),
      send_buffer_(std::exchange(o.send_buffer_, nullptr)),
      recv_buffer_(std::exchange(o.recv_buffer_, nullptr)),
      pending_(std::move(o.pending_)) {
  o.pending_.reset();
}

Exchange& Exchange::operator=(Exchange&& o) noexcept {
  if (this != &o) {
    release();
    ctx_ = std::move(o.ctx_);
    pattern_ = o.pattern_;
    packed_alignment_ = o.packed_alignment_;
    comm_ = o.comm_;
    aligned_ = o.aligned_;
    aligned_from_bytes_ = o.aligned_from_bytes_;
    prepared_ = o.prepared_;
    sends_ = std::move(o.sends_);
    recvs_ = std::move(o.recvs_);
    packed_sends_ = std::move(o.packed_sends_);
    packed_recvs_ = std::move(o.packed_recvs_);
    bytes_to_others_ = o.bytes_to_others_;
    bytes_to_self_ = o.bytes_to_self_;
    send_buffer_ = std::exchange(o.send_buffer_, nullptr);
    recv_buffer_ = std::exchange(o.recv_buffer_, nullptr);
    pending_ = std::move(o.pending_);
    o.pending_.reset();
  }
  return *this;
}

void Exchange::release_buffers() {
  TESSERA_ASSERT(!pending_, "Exchange::release_buffers while the exchange is in flight");
  release();
}

void Exchange::release() {
  pending_.reset();  // waits for a transfer still in flight
  if (ctx_.is_null()) return;
  if (send_buffer_) kernels::deallocate(ctx_.queue(), send_buffer_);
  if (recv_buffer_) kernels::deallocate(ctx_.queue(), recv_buffer_);
  send_buffer_ = recv_buffer_ = nullptr;
}

void Exchange::send(int peer, const void* data, std::size_t bytes, std::size_t lead) {
  TESSERA_ASSERT(pattern_ != ExchangePattern::broadcast, "Exchange::send on a broadcast (Exchange::broadcast)");
  TESSERA_ASSERT(!prepared_, "Exchange::send after prepare");
  TESSERA_ASSERT(lead == kLeadOfAddress || lead < kBoundary, "Exchange::send: a lead of 16 bytes or more");
  TESSERA_ASSERT(peer >= 0 && peer < ctx_.size(), "Exchange::send: no such rank");
  TESSERA_ASSERT(bytes == 0 || data != nullptr, "Exchange::send: no data");
  Piece p;
  p.peer = peer;
  p.data = static_cast<char*>(const_cast<void*>(data));  // only read
  p.bytes = bytes;
  p.lead = lead == kLeadOfAddress ? address_lead(data) : lead;
  sends_.push_back(p);
  (peer == ctx_.rank() ? bytes_to_self_ : bytes_to_others_) += static_cast<double>(bytes);
}

void Exchange::broadcast(int root, void* data, std::size_t bytes) {
  TESSERA_ASSERT(pattern_ == ExchangePattern::broadcast, "Exchange::broadcast on an exchange that is not a broadcast");
  TESSERA_ASSERT(!prepared_, "Exchange::broadcast after prepare");
  TESSERA_ASSERT(sends_.empty(), "Exchange::broadcast: one broadcast per exchange");
  TESSERA_ASSERT(root >= 0 && root < ctx_.size(), "Exchange::broadcast: no such rank");
  TESSERA_ASSERT(bytes == 0 || data != nullptr, "Exchange::broadcast: no data");
  Piece p;
  p.peer = root;
  p.data = static_cast<char*>(data);  // the root's is only read
  p.bytes = bytes;
  sends_.push_back(p);
  bytes_to_others_ = static_cast<double>(bytes);
}

void Exchange::receive(int peer, void* data, std::size_t bytes, std::size_t sender_lead) {
  TESSERA_ASSERT(pattern_ != ExchangePattern::broadcast, "Exchange::receive on a broadcast (Exchange::broadcast)");
  TESSERA_ASSERT(!prepared_, "Exchange::receive after prepare");
  TESSERA_ASSERT(peer >= 0 && peer < ctx_.size(), "Exchange::receive: no such rank");
  TESSERA_ASSERT(sender_lead < kBoundary, "Exchange::receive: a lead of 16 bytes or more");
  TESSERA_ASSERT(bytes == 0 || data != nullptr, "Exchange::receive: no destination");
  Piece p;
  p.peer = peer;
  p.data = static_cast<char*>(data);
  p.bytes = bytes;
  p.lead = sender_lead;
  recvs_.push_back(p);
}

std::size_t Exchange::send_packed(int peer, std::size_t bytes) {
  TESSERA_ASSERT(pattern_ != ExchangePattern::broadcast, "Exchange::send_packed on a broadcast (Exchange::broadcast)");
  TESSERA_ASSERT(!prepared_, "Exchange::send_packed after prepare");
  TESSERA_ASSERT(peer >= 0 && peer < ctx_.size(), "Exchange::send_packed: no such rank");
  Piece p;
  p.peer = peer;
  p.bytes = bytes;
  p.packed = true;
  packed_sends_.push_back(sends_.size());
  sends_.push_back(p);
  (peer == ctx_.rank() ? bytes_to_self_ : bytes_to_others_) += static_cast<double>(bytes);
  return packed_sends_.size() - 1;
}

std::size_t Exchange::receive_packed(int peer, std::size_t bytes, std::size_t sender_lead, std::size_t alignment) {
  TESSERA_ASSERT(pattern_ != ExchangePattern::broadcast, "Exchange::receive_packed on a broadcast (Exchange::broadcast)");
  TESSERA_ASSERT(!prepared_, "Exchange::receive_packed after prepare");
  TESSERA_ASSERT(peer >= 0 && peer < ctx_.size(), "Exchange::receive_packed: no such rank");
  TESSERA_ASSERT(sender_lead < kBoundary, "Exchange::receive_packed: a lead of 16 bytes or more");
  Piece p;
  p.peer = peer;
  p.bytes = bytes;
  TESSERA_ASSERT(alignment == 0 || ((alignment & (alignment - 1)) == 0 && alignment <= packed_alignment_),
                 "Exchange::receive_packed: an alignment that is not a power of two up to the packed alignment");
  p.lead = sender_lead;
  p.packed = true;
  p.alignment = alignment;
  packed_recvs_.push_back(recvs_.size());
  recvs_.push_back(p);
  return packed_recvs_.size() - 1;
}

CollectivePlan Exchange::plan() const {
  if (pattern_ == ExchangePattern::broadcast) {
    if (sends_.empty()) return {};
    return {{Collective::bcast, bytes_to_others_}};
  }
  if (pattern_ == ExchangePattern::all_to_all) return {{Collective::alltoallv, bytes_to_others_ + bytes_to_self_}};
  return {{Collective::neighbor_exchange, bytes_to_others_}};
}

void Exchange::prepare() {
  if (prepared_) return;
  // Slots: packed sends on packed_alignment_; packed receives, and the straight receives the remedy
  // stages (those whose run or destination is off a boundary), on it too, each with room for the
  // sender's lead before its run where the message brings it.
  std::size_t send_total = 0, recv_total = 0;
  for (Piece& p : sends_) {
    if (!p.packed) continue;
    p.slot = send_total;
    p.lead = 0;
    send_total = round_up(send_total + p.bytes, packed_alignment_);
  }
  // A packed receive that brings no lead and names its own alignment follows the piece before it
  // on that boundary alone (end to end, for pieces of one element type).
  for (Piece& p : recvs_) {
    const bool brings_lead = travels_aligned(p);
    if (!p.packed) {
      p.staged = brings_lead && p.bytes > 0 && (p.lead != 0 || address_lead(p.data) != 0);
      if (!p.staged) continue;
    }
    if (!brings_lead) p.lead = 0;
    const std::size_t boundary = p.packed && !brings_lead && p.alignment != 0 ? p.alignment : packed_alignment_;
    p.slot = round_up(recv_total, boundary);
    recv_total = p.slot + p.lead + p.bytes;
  }
  if (send_total) send_buffer_ = kernels::allocate(ctx_.queue(), send_total);
  if (recv_total) recv_buffer_ = kernels::allocate(ctx_.queue(), recv_total);
  prepared_ = true;
}

void* Exchange::send_slot(std::size_t piece) const {
  TESSERA_ASSERT(prepared_ && piece < packed_sends_.size(), "Exchange::send_slot: no such packed send (or not prepared)");
  return static_cast<char*>(send_buffer_) + sends_[packed_sends_[piece]].slot;
}

const void* Exchange::received_slot(std::size_t piece) const {
  TESSERA_ASSERT(prepared_ && piece < packed_recvs_.size(), "Exchange::received_slot: no such packed receive (or not prepared)");
  const Piece& p = recvs_[packed_recvs_[piece]];
  return static_cast<const char*>(recv_buffer_) + p.slot + p.lead;
}

void Exchange::start() {
  TESSERA_ASSERT(!pending_, "Exchange::start: the exchange is in flight already");
  prepare();
  if (pattern_ == ExchangePattern::broadcast) {
    if (sends_.empty()) {  // nothing named: nothing travels
      pending_.emplace();
      return;
    }
    const Piece& p = sends_.front();
    pending_.emplace(comm_.ibcast(p.data, p.bytes, p.peer));
    return;
  }
  std::vector<DeviceComm::Message> sends, recvs;
  sends.reserve(sends_.size());
  recvs.reserve(recvs_.size());
  // Empty messages are left out on both sides alike.
  for (const Piece& p : sends_) {
    if (p.bytes == 0) continue;
    char* from = p.packed ? static_cast<char*>(send_buffer_) + p.slot : p.data;
    const std::size_t lead = travels_aligned(p) && !p.packed ? p.lead : 0;
    sends.push_back({p.peer, from - lead, p.bytes + lead});
  }
  for (const Piece& p : recvs_) {
    if (p.bytes == 0) continue;
    if (p.packed || p.staged) {
      recvs.push_back({p.peer, static_cast<char*>(recv_buffer_) + p.slot, p.bytes + p.lead});
    } else {
      recvs.push_back({p.peer, p.data, p.bytes});
    }
  }
  const Collective kind =
      pattern_ == ExchangePattern::all_to_all ? Collective::alltoallv : Collective::neighbor_exchange;
  const double counted = pattern_ == ExchangePattern::all_to_all ? bytes_to_others_ + bytes_to_self_ : bytes_to_others_;
  pending_.emplace(comm_.start_exchange(kind, counted, sends, recvs));
}

void Exchange::finish() {
  TESSERA_ASSERT(pending_.has_value(), "Exchange::finish without start");
  pending_->wait();
  pending_.reset();
  for (const Piece& p : recvs_)
    if (p.staged)
      kernels::copy_within_async(ctx_.queue(), p.data, static_cast<char*>(recv_buffer_) + p.slot + p.lead, p.bytes);
}

}  // namespace tessera
