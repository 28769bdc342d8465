// rebalance on bytes (the template: algorithms/rebalance.hpp), on the exchange skeleton.
#include <algorithm>
#include <cstdint>
#include <memory>

#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/algorithms/rebalance.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::detail {

void* rebalance_bytes(const Context& ctx, const Partition& from, std::size_t element_bytes, const void* in,
                      PhaseTimes* times) {
  const Partition to = Partition::block(from.global_size(), ctx.size());
  const int me = ctx.rank();
  const kernels::Queue& queue = ctx.queue();
  auto free_block = [queue](void* p) { kernels::deallocate(queue, p); };
  std::unique_ptr<void, decltype(free_block)> out(nullptr, free_block);
  const auto* old_block = static_cast<const char*>(in);
  exchange_phases(
      ctx, times,
      // Plan: per peer, the overlap of the old and the new blocks, both ways; runs straight from
      // the old block into the new one.
      [&] {
        out.reset(kernels::allocate(queue, kernels::array_bytes(to.local_size(me), element_bytes, "a block")));
        auto* new_block = static_cast<char*>(out.get());
        Exchange exchange(ctx, ExchangePattern::all_to_all);
        const index_t from0 = from.offset(me), from1 = from0 + from.local_size(me);
        const index_t to0 = to.offset(me), to1 = to0 + to.local_size(me);
        for (int p = 0; p < ctx.size(); ++p) {
          const index_t s0 = std::max(from0, to.offset(p)), s1 = std::min(from1, to.offset(p) + to.local_size(p));
          if (s1 > s0)
            exchange.send(p, old_block + static_cast<std::size_t>(s0 - from0) * element_bytes,
                          static_cast<std::size_t>(s1 - s0) * element_bytes,
                          lead_of(static_cast<std::size_t>(s0 - from0) * element_bytes));
          const index_t r0 = std::max(to0, from.offset(p)), r1 = std::min(to1, from.offset(p) + from.local_size(p));
          if (r1 > r0)
            exchange.receive(p, new_block + static_cast<std::size_t>(r0 - to0) * element_bytes,
                             static_cast<std::size_t>(r1 - r0) * element_bytes,
                             lead_of(static_cast<std::size_t>(r0 - from.offset(p)) * element_bytes));
        }
        return exchange;
      },
      no_pack, no_overlap, no_unpack);
  return out.release();
}

}  // namespace tessera::detail
