// Local histograms: how many of one rank's samples fall in each bin, counted in 64 bits.
//
//   histogram_even(queue, in, n, EvenBins{lower, upper, bins}, counts)   equal bins over [lower, upper]
//   histogram_edges(queue, in, n, edges, bins, counts)                     bins between bins + 1 edges
//   bincount(queue, in, n, bins, counts)                                   integer samples 0 .. bins - 1
//   sample_range(queue, in, n, range)                                      min and max, NaN skipped
//
// numpy's conventions (numpy.histogram): bin i holds the samples x with e_i <= x < e_{i+1}, and the
// last bin also those equal to its upper edge. With equal bins the edges are numpy's,
// e_i = lower + i * ((upper - lower) / bins) in double (numpy.linspace; e_bins = upper), rounded to
// the comparison type, and a sample's bin is what numpy.histogram(a, bins, range=(lower, upper))
// gives, bit for bit: numpy's estimate (x - lower) * (bins / (upper - lower)), computed in the
// comparison type, corrected against those edges. The comparison type is float for float samples
// and double for the others (integers are converted to double, as numpy does; int64 samples above
// 2^53 in magnitude round). With arbitrary edges a float sample is compared with the double edges
// exactly (numpy's searchsorted in double).
//
// Samples in no bin are counted too: below lower (or the first edge), above upper (or the last
// edge), and NaN. Infinities are below or above. bincount counts x in [0, bins); negative samples
// are below, those >= bins above.
//
// counts: backend memory of histogram_slots(bins) int64 values, overwritten: the bins' counts, then
// the samples below, above and NaN (HistogramSlot). Counts are exact for any n (32-bit counters in
// shared memory are flushed before they could wrap). Stream-ordered under cuda.
//
// Precompiled for int32, int64, float and double samples (bincount: int32 and int64). The device
// and host passes are templates (cuda/device_histogram.cuh, cpu/histogram.hpp) over the binning;
// histogram_by.hpp runs them with a binning of the caller's, on samples of any type.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

// Equal bins: `count` bins over [lower, upper], lower < upper, both finite. `width` is the
// denominator of numpy's norm, count / width: 0 takes upper - lower in double, which is numpy's for
// a range given as numbers; numpy.histogram without `range` divides by max - min computed in the
// samples' own type (rounded to float for float32 samples, the exact integer difference for
// integers), which is what to give here for a range taken from the samples.
struct EvenBins {
  double lower = 0;
  double upper = 1;
  index_t count = 1;
  double width = 0;
};

// Where the samples in no bin are counted, after the bins: counts[bins + slot].
enum class HistogramSlot : int { below = 0, above = 1, nan = 2 };
inline constexpr index_t kHistogramTailSlots = 3;

// What a binner of the caller's (histogram_by.hpp) returns for a sample in no bin: below the first
// bin, or above the last. Any other value outside [0, bins) is an error the histogram reports.
inline constexpr int kBinBelow = -1;
inline constexpr int kBinAbove = -2;

// The length of a counts array of `bins` bins.
inline constexpr index_t histogram_slots(index_t bins) { return bins + kHistogramTailSlots; }

// The most bins one histogram may have (bins are numbered with 32-bit integers on the device).
inline constexpr index_t kMaxHistogramBins = (index_t(1) << 30);

// UsageError unless 1 <= bins <= kMaxHistogramBins.
void check_histogram_bins(index_t bins);
// UsageError unless 1 <= bins.count <= kMaxHistogramBins and lower < upper are finite, with
// bins.count / (upper - lower) finite in double (and width, where given, positive with
// bins.count / width finite). float_samples: the samples are float32, which are
// compared and binned in float (numpy's arithmetic for float32 data): the bounds must then lie in
// float's range, and numpy's norm bins.count / (upper - lower) must be finite as a float too
// (a range narrower than that, bins thinner than about bins / 3.4e38, would bin samples by the
// accidents of overflow; float64 samples bin such a range right).
void check_even_bins(const EvenBins& bins, bool float_samples = false);
// UsageError unless edges holds 2 .. kMaxHistogramBins + 1 strictly increasing values, none NaN
// (infinite edges are allowed: a bin from -inf or to +inf). The message names the first bad index.
void check_edges(std::span<const double> edges);

// The edges numpy.histogram gives for equal bins: bins.count + 1 doubles (the float32 edges are these
// rounded to float, for float samples).
std::vector<double> even_bin_edges(const EvenBins& bins);

// The precompiled instances. `edges` (histogram_edges) is backend memory of bins + 1 values that
// check_edges accepts; the call does not check them (they may live on the device).
#define TESSERA_DECLARE_HISTOGRAM(T)                                                                        \
  void histogram_even(const Queue& queue, const T* in, index_t n, const EvenBins& bins, index_t* counts);    \
  void histogram_edges(const Queue& queue, const T* in, index_t n, const double* edges, index_t bins,       \
                       index_t* counts);
TESSERA_DECLARE_HISTOGRAM(std::int32_t)
TESSERA_DECLARE_HISTOGRAM(std::int64_t)
TESSERA_DECLARE_HISTOGRAM(float)
TESSERA_DECLARE_HISTOGRAM(double)
#undef TESSERA_DECLARE_HISTOGRAM

void bincount(const Queue& queue, const std::int32_t* in, index_t n, index_t bins, index_t* counts);
void bincount(const Queue& queue, const std::int64_t* in, index_t n, index_t bins, index_t* counts);

// The smallest and largest sample of a block, NaN skipped (`count`: the samples that are not NaN;
// min and max are meaningful only where it is > 0). Plain fields, so an array of them travels as bytes.
template <class T>
struct SampleRange {
  T min;
  T max;
  index_t count;
};

// *range (backend memory; under cuda also pinned host memory) = the range of in[0, n).
#define TESSERA_DECLARE_SAMPLE_RANGE(T) \
  void sample_range(const Queue& queue, const T* in, index_t n, SampleRange<T>* range);
TESSERA_DECLARE_SAMPLE_RANGE(std::int32_t)
TESSERA_DECLARE_SAMPLE_RANGE(std::int64_t)
TESSERA_DECLARE_SAMPLE_RANGE(float)
TESSERA_DECLARE_SAMPLE_RANGE(double)
#undef TESSERA_DECLARE_SAMPLE_RANGE

}  // namespace tessera::kernels
