// Tuning of the decoupled look-back (tile_status.cuh, look_back) that the scan and the select
// share; each of them chooses its sleeps per architecture and type in its own tuning file.
#pragma once

namespace tessera::kernels::cuda::detail {

// The look-back's sleeps (0: none): PartialDelayNs right after a tile published its aggregate,
// PollDelayNs before each re-read of a predecessor that had not published yet. The values come
// from CUB's delay constructors of the same architecture, in which fixed_delay_constructor_t<Delay,
// L2WriteLatency> is {L2WriteLatency, Delay} here and no_delay_constructor_t<L2WriteLatency> is
// {L2WriteLatency, 0}.
template <int PartialDelayNs, int PollDelayNs>
struct LookbackDelays {
  static constexpr int kPartialDelayNs = PartialDelayNs;
  static constexpr int kPollDelayNs = PollDelayNs;
};

// Grids under this many tiles do not sleep: few tiles poll, and the sleep would only add latency
// (CUB uses the same threshold).
inline constexpr unsigned kLookbackSleepMinTiles = 500;

}  // namespace tessera::kernels::cuda::detail
