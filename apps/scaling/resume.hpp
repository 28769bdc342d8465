// A study that resumes: with --checkpoint FILE.h5 the rounds measured so far are written after every
// round, as a Tessera checkpoint (io::checkpoint: one HDF5 file committed by rename, a checksum per
// dataset); --restart FILE.h5 (or auto: the --checkpoint file where it exists) reads them back and
// the study goes on with the next round, so that a job that ends (a time limit, a lost node, a
// requeue) loses at most the round it was in. The machine's pings, collectives and node-sharing probe
// are measured again by the resumed run: they describe the allocation it runs on.
//
// The file: /rounds_i64 (int64) and /rounds_f64 (double), one row per point and round in the order
// they ran (the columns below), /rounds_done, and on every dataset the attribute study, which names
// what makes two runs the same study (operation, type, modes, the points' ranks and sizes, calls per
// round, warm-up calls, seed, backend, ranks of the job). A restart from another study is refused.
#pragma once

#include <string>
#include <vector>

#include "measurement.hpp"
#include "options.hpp"
#include "tessera/framework/context.hpp"

namespace tessera::apps::scaling_study {

// What makes two runs the same study, as text (the attribute study).
std::string study_signature(const Options& o, const std::vector<ModeReport>& plan, int world_size,
                            const std::string& backend);

// Collective over world. Writes the rounds of `reports` (complete on world rank 0) and rounds_done
// to `path`. UsageError naming --checkpoint, on every rank, when the file cannot be written (the
// previous checkpoint is then as it was).
void save_rounds(const Context& world, const Context& root_only, const std::string& path,
                 const std::vector<ModeReport>& reports, int rounds_done, const std::string& signature);

// Collective over world. Reads the rounds of the checkpoint at `path` into `reports` (on world rank
// 0) and returns the rounds done (on every rank). UsageError naming --restart, on every rank, when the
// file is missing, not a checkpoint of this study, or damaged.
int restore_rounds(const Context& world, const Context& root_only, const std::string& path,
                   std::vector<ModeReport>& reports, const std::string& signature);

}  // namespace tessera::apps::scaling_study
