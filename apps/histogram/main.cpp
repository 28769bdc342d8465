// histogram: how many samples of a distributed array fall in each bin. Each rank counts its block
// (privatised counters in shared memory on the GPU), then one allreduce of the integer counts gives
// every rank the whole histogram, exactly; --distributed leaves it block-distributed instead (one
// reduce-scatter). Equal bins over --range (default: the smallest and largest sample, found with
// one reduction) or the edges of an HDF5 dataset; numpy.histogram's conventions and counts. The
// table shows the counts as a bar chart of at most 20 rows; --output writes the counts and the edges
// as two datasets (jobs/plot_histogram.py draws them).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "app.hpp"
#include "check.hpp"
#include "perturb.hpp"

namespace {

using tessera::index_t;

constexpr int kChartRows = 20;
constexpr int kBarWidth = 40;

struct Range {
  double lower = 0, upper = 1;
};

// "LO:HI", either may be negative ("-1:1", "-2:-1"): split at the first colon after a character.
Range parse_range(std::string_view text) {
  const auto colon = text.find(':', 1);
  if (colon == std::string_view::npos || colon + 1 >= text.size())
    throw tessera::UsageError("--range: '" + std::string(text) + "' is not LO:HI");
  Range r{tessera::apps::parse_real(text.substr(0, colon), "--range"),
          tessera::apps::parse_real(text.substr(colon + 1), "--range")};
  if (!std::isfinite(r.lower) || !std::isfinite(r.upper))
    throw tessera::UsageError("--range: '" + std::string(text) + "' is not finite");
  if (!(r.lower < r.upper))
    throw tessera::UsageError("--range: the lower bound must be below the upper one (got '" + std::string(text) + "')");
  return r;
}

std::string number_text(double v, int digits = 6) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// The fewest significant digits, 6 or more, that print distinct values as distinct text.
int distinguishing_digits(const std::vector<double>& values) {
  for (int digits = 6; digits < 17; ++digits) {
    bool distinct = true;
    for (std::size_t i = 1; i < values.size() && distinct; ++i)
      distinct = values[i] == values[i - 1] || number_text(values[i], digits) != number_text(values[i - 1], digits);
    if (distinct) return digits;
  }
  return 17;
}

// The edges of a dataset (1-D, at least two strictly increasing values), on every rank.
std::vector<double> read_edges(const tessera::Context& ctx, const tessera::io::DatasetPath& path) {
  using namespace tessera;
  const io::DatasetInfo info = apps::for_flag("--edges", [&] { return io::probe_dataset(ctx, path); });
  if (info.shape.size() != 1) {
    std::string shape;
    for (std::size_t d = 0; d < info.shape.size(); ++d) shape += (d ? " x " : "") + std::to_string(info.shape[d]);
    throw UsageError("--edges: dataset '" + path.dataset + "' in '" + path.file + "' is " +
                     (info.shape.empty() ? std::string("a scalar") : std::to_string(info.shape.size()) + "-D (" + shape + ")") +
                     "; the edges must be a 1-D dataset");
  }
  const DistArray<double> blocks = apps::for_flag("--edges", [&] { return io::read_array<double>(ctx, path); });
  std::vector<double> edges = blocks.gather(0);
  edges.resize(static_cast<std::size_t>(blocks.global_size()));
  ctx.comm().bcast(edges.data(), static_cast<index_t>(edges.size()), 0);
  try {
    kernels::check_edges(edges);
  } catch (const UsageError& e) {
    std::string what = e.what();
    const std::string prefix = "histogram: ";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    throw UsageError("--edges: " + path.str() + ": " + what);
  }
  return edges;
}

// Rows of the chart: every bin where there are at most kChartRows, else a divisor of the bins from
// kChartRows / 2 to kChartRows where there is one (rows of equal width), else kChartRows.
index_t chart_row_count(index_t bins) {
  if (bins <= kChartRows) return bins;
  for (index_t rows = kChartRows; rows >= kChartRows / 2; --rows)
    if (bins % rows == 0) return rows;
  return kChartRows;
}

// The chart: each row the sum of consecutive bins (row r: bins [r * bins / rows, (r + 1) * bins /
// rows)), its count, and a bar of its count per bin scaled to the densest row (rows may hold
// unequal numbers of bins). row_counts: the sums of each row's bins (over all ranks).
std::vector<std::pair<std::string, std::string>> chart_rows(const std::vector<index_t>& row_counts,
                                                            const std::vector<double>& edges, index_t bins) {
  const auto rows = static_cast<index_t>(row_counts.size());
  auto density = [&](index_t r) {
    return static_cast<double>(row_counts[static_cast<std::size_t>(r)]) / static_cast<double>((r + 1) * bins / rows - r * bins / rows);
  };
  double densest = 0;
  for (index_t r = 0; r < rows; ++r) densest = std::max(densest, density(r));
  std::vector<double> bounds;  // the rows' edges, printed with the digits that tell them apart
  for (index_t r = 0; r <= rows; ++r) bounds.push_back(edges[static_cast<std::size_t>(r * bins / rows)]);
  const int digits = distinguishing_digits(bounds);
  std::vector<std::string> labels, numbers;
  std::size_t label_width = 0, number_width = 0;
  for (index_t r = 0; r < rows; ++r) {
    std::string label(1, '[');
    label.append(number_text(bounds[static_cast<std::size_t>(r)], digits));
    label.append(", ");
    label.append(number_text(bounds[static_cast<std::size_t>(r + 1)], digits));
    label.push_back(r + 1 == rows ? ']' : ')');
    labels.push_back(std::move(label));
    numbers.push_back(std::to_string(row_counts[static_cast<std::size_t>(r)]));
    label_width = std::max(label_width, labels.back().size());
    number_width = std::max(number_width, numbers.back().size());
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (index_t r = 0; r < rows; ++r) {
    const index_t c = row_counts[static_cast<std::size_t>(r)];
    const auto width = densest > 0 ? static_cast<int>(std::lround(kBarWidth * density(r) / densest)) : 0;
    std::string bar = width > 0 ? std::string(static_cast<std::size_t>(width), '#') : (c > 0 ? "." : "");
    const std::string& label = labels[static_cast<std::size_t>(r)];
    const std::string& number = numbers[static_cast<std::size_t>(r)];
    out.emplace_back(r == 0 ? "histogram" : "",
                     label + std::string(label_width - label.size() + 1, ' ') + std::string(number_width - number.size(), ' ') +
                         number + " " + bar);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::apps;
  App app(argc, argv, "tessera-histogram",
          "The histogram of a distributed array: samples per bin, counted on each rank and summed across ranks.");
  index_t bins = 10;
  std::optional<Range> given_range;
  std::optional<io::DatasetPath> edges_path;
  bool distributed = false;
  app.parser().add_option("--bins", "N", "equal bins (default 10)", [&](std::string_view v) {
    bins = parse_count(v, "--bins", 1, kernels::kMaxHistogramBins);
  });
  app.parser().add_option("--range", "LO:HI",
                          "the bins' range; samples outside are counted apart (default: the smallest and largest sample)",
                          [&](std::string_view v) { given_range = parse_range(v); });
  app.parser().add_option("--edges", "FILE.h5:/DATASET", "bin edges from a 1-D dataset, strictly increasing (instead of --bins, --range)",
                          [&](std::string_view v) { edges_path = parse_dataset_option(v, "--edges"); });
  app.parser().add_switch("--distributed", "leave the counts block-distributed over the ranks (one reduce-scatter instead of an allreduce)",
                          &distributed);

  return app.run([&](const Context& ctx) -> int {
    const CommonOptions& o = app.options();
    if (edges_path && (app.parser().given("--bins") || given_range))
      throw UsageError("--edges: cannot be combined with --bins or --range (the edges define the bins)");
    const Perturbation perturbation = test_perturbation(app, ctx, {Perturbation::Kind::move});
    const std::string edges_dataset = o.output ? o.output->dataset + "_edges" : std::string();
    if (o.output)
      for_flag("--output", [&] { io::check_output_path(ctx, {o.output->file, edges_dataset}, o.overwrite); });
    const ArraySource source = resolve_array_source(ctx, app);
    std::vector<double> given_edges;
    if (edges_path) given_edges = read_edges(ctx, *edges_path);
    {
      // What every rank surely holds for the bins: the 64-bit counts on the backend and on the host,
      // and the edges in double.
      const index_t count = edges_path ? static_cast<index_t>(given_edges.size()) - 1 : bins;
      require_memory(ctx, static_cast<std::size_t>(std::max<index_t>(count, 0)) * 24,
                     std::string(edges_path ? "--edges" : "--bins") + ": " + std::to_string(count) + " bins");
    }

    return io::dispatch(source.dtype, [&]<class T>() -> int {
      const DistArray<T> data = load_array<T>(ctx, app, source);

      // The bins: given edges, or equal bins over the given range or the samples' own.
      const bool even = !edges_path;
      EvenBins even_bins{0, 1, bins};
      std::string range_text = "given";
      if (even) {
        if (given_range) {
          even_bins.lower = given_range->lower;
          even_bins.upper = given_range->upper;
        } else {
          const SampleRange<T> r = sample_range(data);
          range_text = "the samples' min and max";
          if (r.count > 0) {
            if (!std::isfinite(static_cast<double>(r.min)) || !std::isfinite(static_cast<double>(r.max)))
              throw UsageError("--range: the samples include infinities, so their min and max make no range; give --range LO:HI");
            even_bins.lower = static_cast<double>(r.min);
            even_bins.upper = static_cast<double>(r.max);
            if (even_bins.lower == even_bins.upper) {  // numpy widens a single value by a half each way
              even_bins.lower -= 0.5;
              even_bins.upper += 0.5;
              range_text += ", widened by 0.5 (all samples are equal)";
            } else {
              // numpy's norm divides by max - min in the samples' type: float arithmetic for float32,
              // the exact difference for integers (int64 beyond 2^53 differs from the doubles').
              if constexpr (std::is_same_v<T, float>) even_bins.width = static_cast<double>(r.max - r.min);
              else if constexpr (std::is_integral_v<T>)
                even_bins.width = static_cast<double>(static_cast<std::uint64_t>(r.max) - static_cast<std::uint64_t>(r.min));
            }
          } else {
            range_text = "[0, 1] (no samples other than NaN)";
          }
        }
        if constexpr (std::is_same_v<T, float>) {  // float samples are compared with float bounds
          constexpr double kFloatMax = std::numeric_limits<float>::max();
          if (std::fabs(even_bins.lower) > kFloatMax || std::fabs(even_bins.upper) > kFloatMax)
            throw UsageError("--range: [" + number_text(even_bins.lower) + ", " + number_text(even_bins.upper) +
                             "] lies beyond the float32 range of the samples");
        }
        try {
          kernels::check_even_bins(even_bins, std::is_same_v<T, float>);
        } catch (const UsageError& e) {
          std::string what = e.what();
          const std::string prefix = "histogram: ";
          if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
          throw UsageError("--range: " + what);
        }
      }
      const std::vector<double> edges = even ? kernels::even_bin_edges(even_bins) : given_edges;
      const index_t bin_count = static_cast<index_t>(edges.size()) - 1;

      // The histogram, timed.
      Histogram replicated;
      DistributedHistogram spread;
      const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) {
        if (distributed) {
          spread = even ? histogram_distributed(data, even_bins, times) : histogram_distributed(data, std::span<const double>(edges), times);
        } else {
          replicated = even ? histogram(data, even_bins, times) : histogram(data, std::span<const double>(edges), times);
        }
      });

      // This rank's bins (all of them, or its block), for the chart, the check and the output.
      // TESSERA_TEST_PERTURB=move changes them as one wrong count would.
      verify::HistogramCounts h;
      h.bins = bin_count;
      h.replicated = !distributed;
      if (distributed) {
        const std::vector<std::int64_t> mine = spread.counts.local_to_host();
        h.counts.assign(mine.begin(), mine.end());
        h.first_bin = spread.counts.global_offset();
        h.below = spread.below;
        h.above = spread.above;
        h.nan = spread.nan;
      } else {
        h.counts = replicated.counts;
        h.below = replicated.below;
        h.above = replicated.above;
        h.nan = replicated.nan;
      }
      if (perturbation) {
        perturb_move(ctx, perturbation, h.counts, h.first_bin, h.bins);
        if (distributed) spread.counts.local_from_host(std::vector<std::int64_t>(h.counts.begin(), h.counts.end()));
        else replicated.counts = h.counts;
      }
      // The chart's rows: each rank sums the rows' bins it holds.
      const index_t rows = chart_row_count(bin_count);
      std::array<index_t, kChartRows> row_sums{};
      for (std::size_t i = 0; i < h.counts.size(); ++i) {
        const index_t bin = h.first_bin + static_cast<index_t>(i);
        // Row r holds bins [r * bins / rows, (r + 1) * bins / rows): bin b is in the last row r with
        // r * bins / rows <= b, that is r = ((b + 1) * rows - 1) / bins.
        row_sums[static_cast<std::size_t>(((bin + 1) * rows - 1) / bin_count)] += h.counts[i];
      }
      std::vector<index_t> row_counts(static_cast<std::size_t>(rows), 0);
      if (distributed) {
        for (const auto& sums : ctx.comm().allgather(row_sums))
          for (index_t r = 0; r < rows; ++r) row_counts[static_cast<std::size_t>(r)] += sums[static_cast<std::size_t>(r)];
      } else {
        for (index_t r = 0; r < rows; ++r) row_counts[static_cast<std::size_t>(r)] = row_sums[static_cast<std::size_t>(r)];
      }
      index_t in_bins = 0;
      for (index_t c : row_counts) in_bins += c;

      Report r;
      r.input = source.description;
      r.dtype = source.dtype;
      r.sizes["n"] = static_cast<long long>(source.n);
      r.parameters["bins"] = static_cast<long long>(bin_count);
      r.parameters["range"] = even ? Json(Json::Array{Json(even_bins.lower), Json(even_bins.upper)}) : Json();
      r.parameters["range_from"] = even ? Json(given_range ? "--range" : "samples") : Json();
      r.parameters["edges"] = edges_path ? Json(edges_path->str()) : Json();
      r.parameters["distributed"] = distributed;
      const int range_digits = distinguishing_digits({even_bins.lower, even_bins.upper});
      r.rows.emplace_back("bins", even ? std::to_string(bin_count) + " equal bins over [" + number_text(even_bins.lower, range_digits) +
                                             ", " + number_text(even_bins.upper, range_digits) + "] (" + range_text + ")"
                                       : std::to_string(bin_count) + " bins between the edges of " + edges_path->str());
      r.rows.emplace_back("counts", distributed ? "block-distributed over the ranks (reduce-scatter)" : "on every rank (allreduce)");
      for (auto& row : chart_rows(row_counts, edges, bin_count)) r.rows.push_back(std::move(row));
      Json result = Json::object();
      result["in_bins"] = static_cast<long long>(in_bins);
      result["below"] = static_cast<long long>(h.below);
      result["above"] = static_cast<long long>(h.above);
      result["nan"] = static_cast<long long>(h.nan);
      Json chart = Json::array();
      for (index_t c : row_counts) chart.push_back(static_cast<long long>(c));
      result["chart"] = chart;
      r.result = result;
      r.result_text = std::to_string(in_bins) + " of " + std::to_string(source.n) + " samples in the bins; " +
                      std::to_string(h.below) + " below, " + std::to_string(h.above) + " above, " + std::to_string(h.nan) + " NaN";
      if (o.verify) r.verdict = verify::check_histogram(data, h, edges, even, even_bins.width);
      r.timing = timing;
      const double bytes = static_cast<double>(source.n) * sizeof(T);
      r.throughput = timing.total > 0 ? bytes / timing.total / 1e9 : 0;
      r.throughput_unit = "GB/s";
      r.throughput_basis = "n samples read once";

      const bool wrong = r.verdict && !r.verdict->ok;
      if (o.output && !wrong) {
        // The counts in the block partition (the distributed ones as they are), the edges on the first rank.
        std::optional<DistArray<std::int64_t>> counts_blocks;
        if (!distributed) counts_blocks.emplace(DistArray<std::int64_t>::from_replicated(
                              ctx, std::span<const std::int64_t>(replicated.counts.data(), replicated.counts.size())));
        const DistArray<std::int64_t>& counts_out = distributed ? spread.counts : *counts_blocks;
        std::vector<index_t> edge_parts(static_cast<std::size_t>(ctx.size()), 0);
        edge_parts[0] = static_cast<index_t>(edges.size());
        DistArray<double> edges_out(ctx, Partition::from_counts(edge_parts));
        if (ctx.is_root()) edges_out.local_from_host(edges);
        auto counts_attributes = output_attributes(app, ctx, source.dtype);
        counts_attributes.extra.emplace_back("content", "histogram counts, int64, one per bin");
        counts_attributes.extra.emplace_back("edges", edges_dataset);
        counts_attributes.extra.emplace_back("bins", even ? "equal" : "given edges");
        counts_attributes.extra.emplace_back("below", std::to_string(h.below));
        counts_attributes.extra.emplace_back("above", std::to_string(h.above));
        counts_attributes.extra.emplace_back("nan", std::to_string(h.nan));
        if (edges_path) counts_attributes.extra.emplace_back("edges_from", edges_path->str());
        auto edges_attributes = output_attributes(app, ctx, source.dtype);
        edges_attributes.extra.emplace_back("content", "histogram bin edges, float64, bins + 1 (bin i is [e_i, e_i+1), the last closed)");
        edges_attributes.extra.emplace_back("counts", o.output->dataset);
        io::OutputFile out(ctx, o.output->file);
        out.add(counts_out, o.output->dataset, counts_attributes).add(edges_out, edges_dataset, edges_attributes);
        for_flag("--output", [&] { out.commit(); });
      }
      publish(app, ctx, r);
      return wrong ? kExitVerifyFailed : kExitOk;
    });
  });
}
