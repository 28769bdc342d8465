// The histograms: argument checks, numpy's edges, and the hand-over to the backend named by the queue.
#include <cmath>
#include <cstdint>
#include <limits>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "backend_dispatch.hpp"
#include "histogram_backends.hpp"
#include "tessera/kernels/detail/histogram_bins.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::kernels {
namespace {

// 17 significant digits (printf's %.17g).
std::string text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void check_bin_count(index_t bins, const char* operation) {
  if (bins < 1 || bins > kMaxHistogramBins)
    throw UsageError(std::string(operation) + ": " + std::to_string(bins) + " bins; expected 1 to " +
                     std::to_string(kMaxHistogramBins));
}

}  // namespace

void check_histogram_bins(index_t bins) { check_bin_count(bins, "histogram"); }

void check_even_bins(const EvenBins& bins, bool float_samples) {
  check_bin_count(bins.count, "histogram");
  if (!std::isfinite(bins.lower) || !std::isfinite(bins.upper))
    throw UsageError("histogram: the range [" + text(bins.lower) + ", " + text(bins.upper) + "] is not finite");
  if (!(bins.lower < bins.upper))
    throw UsageError("histogram: the range [" + text(bins.lower) + ", " + text(bins.upper) +
                     "] is empty (the lower bound must be below the upper one)");
  const double delta = bins.upper - bins.lower;
  if (!std::isfinite(delta) || !std::isfinite(static_cast<double>(bins.count) / delta))
    throw UsageError("histogram: the range [" + text(bins.lower) + ", " + text(bins.upper) +
                     "] is too wide or too narrow for double arithmetic");
  const double width = bins.width != 0 ? bins.width : delta;
  if (float_samples) {
    constexpr double kMax = std::numeric_limits<float>::max();
    if (std::fabs(bins.lower) > kMax || std::fabs(bins.upper) > kMax)
      throw UsageError("histogram: the range [" + text(bins.lower) + ", " + text(bins.upper) +
                       "] lies outside what float32 samples can be compared with");
    if (!std::isfinite(static_cast<float>(bins.upper) - static_cast<float>(bins.lower)))
      throw UsageError("histogram: the range [" + text(bins.lower) + ", " + text(bins.upper) + "] is too wide for " +
                       "float32 samples (upper - lower overflows float arithmetic; read the samples as float64)");
    if (!std::isfinite(static_cast<float>(static_cast<double>(bins.count) / width)))
      throw UsageError("histogram: the range [" + text(bins.lower) + ", " + text(bins.upper) + "] is too narrow for " +
                       std::to_string(bins.count) + " bins of float32 samples (bin width " +
                       text(width / static_cast<double>(bins.count)) +
                       ": float arithmetic overflows; read the samples as float64)");
  }
  if (bins.width != 0 && !(bins.width > 0 && std::isfinite(bins.width) && std::isfinite(static_cast<double>(bins.count) / bins.width)))
    throw UsageError("histogram: the width " + text(bins.width) + " of the range [" + text(bins.lower) + ", " +
                     text(bins.upper) + "] is not a positive number that " + std::to_string(bins.count) +
                     " bins can divide");
}

void check_edges(std::span<const double> edges) {
  if (edges.size() < 2)
    throw UsageError("histogram: " + std::to_string(edges.size()) + " edge(s); at least 2 are needed (one bin)");
  check_bin_count(static_cast<index_t>(edges.size()) - 1, "histogram");
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (std::isnan(edges[i])) throw UsageError("histogram: edge " + std::to_string(i) + " is NaN");
    if (i > 0 && !(edges[i - 1] < edges[i]))
      throw UsageError("histogram: the edges are not strictly increasing: edge " + std::to_string(i) + " (" +
                       text(edges[i]) + ") does not exceed edge " + std::to_string(i - 1) + " (" +
                       text(edges[i - 1]) + ")");
  }
}

std::vector<double> even_bin_edges(const EvenBins& bins) {
  check_even_bins(bins);
  const auto binning = detail::make_even_binning<double>(bins.lower, bins.upper, bins.count, bins.width);
  std::vector<double> edges(static_cast<std::size_t>(bins.count) + 1);
  for (index_t i = 0; i <= bins.count; ++i) edges[static_cast<std::size_t>(i)] = binning.edge(static_cast<int>(i));
  return edges;
}


#define TESSERA_DEFINE_HISTOGRAM(T)                                                                         \
  void histogram_even(const Queue& q, const T* in, index_t n, const EvenBins& bins, index_t* counts) {      \
    TESSERA_ASSERT(n >= 0, "histogram_even: negative element count");                                     \
    check_even_bins(bins, std::is_same_v<T, float>);                                                       \
    TESSERA_DISPATCH(q, cpu::histogram_even(in, n, bins, counts),                                          \
                     cuda::histogram_even(q, in, n, bins, counts));                                        \
  }                                                                                                        \
  void histogram_edges(const Queue& q, const T* in, index_t n, const double* edges, index_t bins,           \
                       index_t* counts) {                                                                  \
    TESSERA_ASSERT(n >= 0, "histogram_edges: negative element count");                                    \
    check_bin_count(bins, "histogram");                                                                    \
    TESSERA_DISPATCH(q, cpu::histogram_edges(in, n, edges, bins, counts),                                  \
                     cuda::histogram_edges(q, in, n, edges, bins, counts));                                \
  }                                                                                                        \
  void sample_range(const Queue& q, const T* in, index_t n, SampleRange<T>* range) {                       \
    TESSERA_ASSERT(n >= 0, "sample_range: negative element count");                                       \
    TESSERA_DISPATCH(q, cpu::sample_range(in, n, range), cuda::sample_range(q, in, n, range));             \
  }
TESSERA_DEFINE_HISTOGRAM(std::int32_t)
TESSERA_DEFINE_HISTOGRAM(std::int64_t)
TESSERA_DEFINE_HISTOGRAM(float)
TESSERA_DEFINE_HISTOGRAM(double)
#undef TESSERA_DEFINE_HISTOGRAM

#define TESSERA_DEFINE_BINCOUNT(T)                                                                \
  void bincount(const Queue& q, const T* in, index_t n, index_t bins, index_t* counts) {          \
    TESSERA_ASSERT(n >= 0, "bincount: negative element count");                                  \
    check_bin_count(bins, "bincount");                                                            \
    TESSERA_DISPATCH(q, cpu::bincount(in, n, bins, counts), cuda::bincount(q, in, n, bins, counts)); \
  }
TESSERA_DEFINE_BINCOUNT(std::int32_t)
TESSERA_DEFINE_BINCOUNT(std::int64_t)
#undef TESSERA_DEFINE_BINCOUNT

}  // namespace tessera::kernels
