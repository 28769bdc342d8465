// How a global index range [0, global_size) is cut into one contiguous block per part (rank).
// Two kinds: the balanced block distribution (sizes differ by at most one; the first
// global_size % parts blocks hold the extra element), and ragged partitions made from per-part
// counts, as a filter leaves them. Empty blocks are allowed everywhere (global_size < parts, or 0).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tessera/kernels/config.hpp"

namespace tessera {

class Partition {
 public:
  // The balanced block distribution of global_size elements over `parts` parts.
  static Partition block(index_t global_size, int parts);
  // A ragged partition: part p holds counts[p] elements; offsets are the exclusive scan of counts.
  static Partition from_counts(std::span<const index_t> counts);

  Partition() = default;

  index_t global_size() const { return global_size_; }
  int parts() const { return parts_; }
  bool is_block() const { return offsets_.empty(); }

  index_t local_size(int part) const;
  // Global index of the first element of `part` (== global_size for empty trailing parts).
  index_t offset(int part) const;
  // The part that holds global index i, 0 <= i < global_size. Empty parts own nothing.
  int owner(index_t i) const;

  std::vector<index_t> counts() const;
  bool operator==(const Partition& other) const;

 private:
  index_t global_size_ = 0;
  int parts_ = 1;
  std::vector<index_t> offsets_;  // ragged only: parts + 1 entries, offsets_[parts] == global_size
};

// rows * cols as an element count. UsageError "<what>: rows x cols elements pass 2^63 - 1" where
// the product does not fit an index_t, the most elements a global index can number: every 2-D
// layout (DistMatrix, Field2D) checks its shape with it before anything is sized from it.
index_t checked_elements(index_t rows, index_t cols, const std::string& what);

}  // namespace tessera
