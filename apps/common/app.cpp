#include "app.hpp"

#include <mpi.h>

#include <cstdio>
#include <exception>

#include "tessera/build_config.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::apps {
namespace {

std::string& the_app_name() {
  static std::string name = "tessera";
  return name;
}

std::string seconds_text(double s) {
  char text[32];
  if (s < 100) std::snprintf(text, sizeof text, "%.1f s", s);
  else if (s < 6000) std::snprintf(text, sizeof text, "%.0f min", s / 60);
  else std::snprintf(text, sizeof text, "%.1f h", s / 3600);
  return text;
}

}  // namespace

const std::string& app_name() { return the_app_name(); }

void Progress::update(double done) {
  if (!show_) return;
  const double now = elapsed_.seconds();
  const bool last = done >= total_;
  if (now < kQuietStart || (now - last_ < kEvery && !last) || (last && last_ == 0)) return;
  last_ = now;
  char numbers[64];
  std::snprintf(numbers, sizeof numbers, "%.0f of %.0f", done, total_);
  const std::string left = done > 0 && !last ? ", about " + seconds_text(now * (total_ - done) / done) + " left" : "";
  std::fprintf(stderr, "%s: %s %s, %s elapsed%s\n", app_.c_str(), what_.c_str(), numbers, seconds_text(now).c_str(),
               left.c_str());
  std::fflush(stderr);
}

App::App(int& argc, char**& argv, std::string name, std::string summary, bool common_n)
    : runtime_(argc, argv), argc_for_parse_(argc), argv_for_parse_(argv), name_(name),
      parser_(std::move(name), std::move(summary)) {
  the_app_name() = name_;
  add_common_options(parser_, options_, common_n);
}

int App::run(const std::function<int(const Context&)>& body) {
  const bool root = runtime_.world_rank() == 0;
  try {
    // argv is the same on every rank, so every rank parses to the same verdict without talking.
    parser_.parse(argc_for_parse_, argv_for_parse_);
    if (options_.help) {
      if (root) std::fputs(parser_.help_text().c_str(), stdout);
      return kExitOk;
    }
    if (options_.version) {
      if (root)
        std::printf("%s (Tessera) %s, cuda %d, nccl %d, parallel hdf5 %d\n", name_.c_str(), version_text().c_str(),
                    TESSERA_HAVE_CUDA, TESSERA_HAVE_NCCL, TESSERA_HDF5_PARALLEL);
      return kExitOk;
    }
    const Context ctx = runtime_.start(parse_backend_choice(options_.backend), options_.threads);
    if (!options_.json.empty()) check_report_path(ctx, *this);
    if (options_.output)
      for_flag("--output", [&] { io::check_output_path(ctx, *options_.output, options_.overwrite); });
    return body(ctx);
  } catch (const UsageError& e) {
    if (root) {
      std::fprintf(stderr, "%s: %s\n", name_.c_str(), e.what());
      std::fflush(stderr);
    }
    return kExitUsage;
  } catch (const std::bad_alloc& e) {
    // Out of memory after the input was made (an output, scratch), maybe on this rank only: one line
    // from this rank, and the whole job ends with the usage status rather than leave the others
    // waiting in a collective.
    std::fprintf(stderr, "%s: out of memory on rank %d: %s\n", name_.c_str(), runtime_.world_rank(),
                 dynamic_cast<const OutOfMemory*>(&e) ? e.what() : "cannot allocate host memory (std::bad_alloc)");
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, kExitUsage);
    return kExitUsage;
  } catch (const std::exception& e) {
    // Not the user's doing and maybe on one rank only: end the whole job rather than leave the
    // other ranks waiting in a collective.
    fatal(__FILE__, __LINE__, name_.c_str(), e.what());
  }
}

ArraySource resolve_array_source(const Context& ctx, const App& app) {
  const CommonOptions& o = app.options();
  ArraySource source;
  if (o.input) {
    if (app.parser().given("--n"))
      throw UsageError("--n: cannot be combined with --input (the size comes from the dataset)");
    const io::DatasetInfo info = for_flag("--input", [&] { return io::probe_dataset(ctx, *o.input); });
    if (info.shape.size() != 1) {
      std::string shape;
      for (std::size_t d = 0; d < info.shape.size(); ++d) shape += (d ? " x " : "") + std::to_string(info.shape[d]);
      const std::string what = info.shape.empty() ? "a scalar" : std::to_string(info.shape.size()) + "-D (" + shape + ")";
      throw UsageError("--input: dataset '" + o.input->dataset + "' in '" + o.input->file + "' is " + what + "; " +
                       app.name() + " needs a 1-D dataset");
    }
    source.dtype = o.dtype.value_or(info.dtype);
    source.n = info.shape[0];
    source.description = o.input->str() + " (" + info.type_name + ")";
  } else {
    source.dtype = o.dtype.value_or(io::DType::float32);
    source.n = o.n;
    source.description = "generated, seed " + std::to_string(o.seed);
  }
  // The largest block must have a byte count at all (2^62 elements of 8 bytes do not), and what it
  // needs is said in the message of any allocation failure (load_array).
  const index_t per_rank = source.n / ctx.size() + (source.n % ctx.size() ? 1 : 0);
  const std::size_t element = io::size_of(source.dtype);
  const char* flag = o.input ? "--input" : "--n";
  if (static_cast<std::size_t>(per_rank) > SIZE_MAX / element)
    throw UsageError(std::string(flag) + ": " + std::to_string(source.n) + " elements of " + io::to_string(source.dtype) +
                     " on " + std::to_string(ctx.size()) + " rank(s) need more than 2^64 bytes per rank");
  source.bytes_per_rank = static_cast<std::size_t>(per_rank) * element;
  return source;
}

io::OutputAttributes output_attributes(const App& app, const Context& ctx, io::DType dtype) {
  io::OutputAttributes a;
  a.app = app.name();
  a.backend = to_string(ctx.backend());
  a.ranks = ctx.size();
  a.extra.emplace_back("dtype", io::to_string(dtype));
  a.overwrite = app.options().overwrite;
  if (app.options().input) a.extra.emplace_back("input", app.options().input->str());
  return a;
}

std::string communication_path(const Context& ctx) { return to_string(device_comm_path(ctx)); }

}  // namespace tessera::apps
