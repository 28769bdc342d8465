#include "tessera/framework/partition.hpp"

#include <algorithm>

#include "tessera/kernels/error.hpp"

namespace tessera {

Partition Partition::block(index_t global_size, int parts) {
  if (global_size < 0) throw UsageError("partition: negative global size " + std::to_string(global_size));
  if (parts < 1) throw UsageError("partition: number of parts must be at least 1, got " + std::to_string(parts));
  Partition p;
  p.global_size_ = global_size;
  p.parts_ = parts;
  return p;
}

Partition Partition::from_counts(std::span<const index_t> counts) {
  if (counts.empty()) throw UsageError("partition: no parts given");
  Partition p;
  p.parts_ = static_cast<int>(counts.size());
  p.offsets_.resize(counts.size() + 1);
  index_t running = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0) throw UsageError("partition: negative count for part " + std::to_string(i));
    p.offsets_[i] = running;
    running += counts[i];
  }
  p.offsets_[counts.size()] = running;
  p.global_size_ = running;
  return p;
}

index_t Partition::offset(int part) const {
  TESSERA_ASSERT(part >= 0 && part <= parts_, "partition: part out of range");
  if (!offsets_.empty()) return offsets_[static_cast<std::size_t>(part)];
  const index_t base = global_size_ / parts_;
  const index_t extra = global_size_ % parts_;
  return part * base + std::min<index_t>(part, extra);
}

index_t Partition::local_size(int part) const {
  TESSERA_ASSERT(part >= 0 && part < parts_, "partition: part out of range");
  return offset(part + 1) - offset(part);
}

int Partition::owner(index_t i) const {
  TESSERA_ASSERT(i >= 0 && i < global_size_, "partition: global index out of range");
  if (offsets_.empty()) {
    const index_t base = global_size_ / parts_;
    const index_t extra = global_size_ % parts_;
    const index_t big = extra * (base + 1);  // elements held by the parts with one extra
    if (i < big) return static_cast<int>(i / (base + 1));
    return static_cast<int>(extra + (i - big) / base);
  }
  // The last part whose offset is <= i and that is not empty.
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), i);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

std::vector<index_t> Partition::counts() const {
  std::vector<index_t> c(static_cast<std::size_t>(parts_));
  for (int p = 0; p < parts_; ++p) c[static_cast<std::size_t>(p)] = local_size(p);
  return c;
}

bool Partition::operator==(const Partition& other) const {
  if (global_size_ != other.global_size_ || parts_ != other.parts_) return false;
  for (int p = 0; p < parts_; ++p)
    if (offset(p) != other.offset(p)) return false;
  return true;
}

index_t checked_elements(index_t rows, index_t cols, const std::string& what) {
  TESSERA_ASSERT(rows >= 0 && cols >= 0, "checked_elements: negative extent");
  index_t product = 0;
  if (__builtin_mul_overflow(rows, cols, &product))
    throw UsageError(what + ": " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " elements pass 2^63 - 1, the most a global index can number");
  return product;
}

}  // namespace tessera
