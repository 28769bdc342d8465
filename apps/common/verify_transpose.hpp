// --verify of the transpose app: a checksum that depends on every element's position, so that an
// element in the wrong place is caught without a serial copy of the matrix. Over this rank's block
// only, then one sum of 64-bit integers over the ranks:
//
//   checksum(M) = sum over (i, j) of weight(i, j) * (bits(m_ij) + K)   mod 2^64
//
// bits(x) is the element's bytes as an unsigned little-endian integer (so floats are compared bit
// for bit, -0 and NaN payloads included; an element of more than 8 bytes, a complex number, is cut
// into 8-byte words w_0, w_1, ... and bits = w_0, then bits = splitmix64(bits) ^ w_k for each
// further word), K = 0x9E3779B97F4A7C15 (zeros count too), and
// weight(i, j) = splitmix64(splitmix64(i) ^ j). B = A^T exactly when checksum(A) equals the same
// sum over B with i and j swapped (up to a 2^-64 chance of a collision); B = A (redistribute) when
// the two checksums agree as they are. Integer arithmetic: the order of summation cannot matter.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "app.hpp"
#include "tessera/framework/dist_matrix.hpp"

namespace tessera::apps::verify {

inline std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The position checksum of the whole matrix (collective; the same on every rank). swap: weigh
// element (i, j) as if it stood at (j, i).
// bits(x) above.
template <class T>
std::uint64_t element_bits(const T& x) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof(T) < 8 ? sizeof(T) : 8);
  for (std::size_t at = 8; at < sizeof(T); at += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, reinterpret_cast<const unsigned char*>(&x) + at, sizeof(T) - at < 8 ? sizeof(T) - at : 8);
    bits = splitmix64(bits) ^ word;
  }
  return bits;
}

template <class T>
std::uint64_t position_checksum(const DistMatrix<T>& m, bool swap) {
  const std::vector<T> block = m.local_to_host();
  std::uint64_t sum = 0;
  for (index_t r = 0; r < m.local_rows(); ++r) {
    const auto i = static_cast<std::uint64_t>(m.row_offset() + r);
    const std::uint64_t row_hash = splitmix64(i);
    for (index_t c = 0; c < m.local_cols(); ++c) {
      const auto j = static_cast<std::uint64_t>(m.col_offset() + c);
      const std::uint64_t bits = element_bits(block[static_cast<std::size_t>(r * m.local_cols() + c)]);
      const std::uint64_t weight = swap ? splitmix64(splitmix64(j) ^ i) : splitmix64(row_hash ^ j);
      sum += weight * (bits + 0x9E3779B97F4A7C15ull);
    }
  }
  return m.grid().context().comm().allreduce(sum, ReduceOp::sum);
}

inline std::string hex64(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// B = A^T (transposed) or B = A: shapes, then the position checksums.
template <class T>
Verdict check_transpose(const DistMatrix<T>& a, const DistMatrix<T>& b, bool transposed) {
  Verdict v;
  const index_t want_rows = transposed ? a.cols() : a.rows(), want_cols = transposed ? a.rows() : a.cols();
  if (b.rows() != want_rows || b.cols() != want_cols) {
    v.ok = false;
    v.detail = "the result is " + std::to_string(b.rows()) + " x " + std::to_string(b.cols()) + ", expected " +
               std::to_string(want_rows) + " x " + std::to_string(want_cols);
    return v;
  }
  // The result's own checksum (the one the report shows) against the one A gives when each of its
  // elements is counted where the result should hold it: one checksum on both sides of the check.
  const std::uint64_t of_b = position_checksum(b, false), of_a = position_checksum(a, transposed);
  v.ok = of_a == of_b;
  v.detail = std::string("position checksum of the result ") + hex64(of_b) + (v.ok ? " equals" : " differs from") +
             " that of A" + (transposed ? " with i and j swapped " : " ") + hex64(of_a);
  return v;
}

}  // namespace tessera::apps::verify
