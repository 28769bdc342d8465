// tessera_bench_gemm_host: the cpu backend's local GEMM (kernels::gemm, both engines) beside
// OpenBLAS's own cblas_dgemm / cblas_sgemm called directly, on one process, in one run.
//   tessera_bench_gemm_host [--n N[,N...]] [--reps R] [--dtype float64|float32] [--json FILE]
// Per order N (square, row-major): each call's time, the vendor engine and OpenBLAS alone back to
// back (in turn first) so that load on a shared machine falls on both alike, then the tiled
// engine; the median of R calls each, GFLOP/s = 2 N^3 / time, and the median over the R pairs of
// OpenBLAS alone's time / the vendor engine's (vendor/alone in rate). The vendor engine's C must equal
// OpenBLAS's bitwise (the same call, the same threads); the tiled engine's must agree within
// 4 (N + 1) eps |A||B|. Threads: OMP_NUM_THREADS (OpenBLAS's set to the same before its own calls).
// Exit status 0 when every row is VALID.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/kernels/gemm.hpp"

namespace {

using tessera::GemmEngine;
using tessera::index_t;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class T>
void blas_alone(index_t n, const T* a, const T* b, T* c) {
  const auto bn = static_cast<blasint>(n);
  if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0, a, bn, b, bn, 0.0, c, bn);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, a, bn, b, bn, 0.0f, c, bn);
}

struct Row {
  index_t n;
  double vendor_s, tiled_s, blas_s;
  double ratio;  // median over the pairs of OpenBLAS alone's time / the vendor engine's
  bool valid;
  std::string why;
};

template <class T>
Row run(index_t n, int reps) {
  const std::size_t nn = static_cast<std::size_t>(n * n);
  std::vector<T> a(nn), b(nn), c_vendor(nn), c_tiled(nn), c_blas(nn);
  std::mt19937_64 gen(20240611 + static_cast<std::uint64_t>(n));
  std::uniform_real_distribution<T> dist(-1, 1);
  for (auto& x : a) x = dist(gen);
  for (auto& x : b) x = dist(gen);
  const tessera::kernels::Queue q{};
  openblas_set_num_threads(omp_get_max_threads());
  auto time = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto vendor = [&] { tessera::kernels::gemm(q, GemmEngine::vendor, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c_vendor.data(), n); };
  auto tiled = [&] { tessera::kernels::gemm(q, GemmEngine::tiled, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c_tiled.data(), n); };
  auto alone = [&] {
    openblas_set_num_threads(omp_get_max_threads());
    blas_alone(n, a.data(), b.data(), c_blas.data());
  };
  vendor(), tiled(), alone();  // warm-up
  std::vector<double> tv, tt, tb, ratio;
  for (int r = 0; r < reps; ++r) {
    // The vendor engine and OpenBLAS alone back to back, in turn first: a pair sees the same load.
    const double v0 = r % 2 ? 0 : time(vendor), b = time(alone), v = r % 2 ? time(vendor) : v0;
    tv.push_back(v);
    tb.push_back(b);
    ratio.push_back(b / v);
    tt.push_back(time(tiled));
  }
  Row row{n, median(tv), median(tt), median(tb), median(ratio), true, ""};
  if (std::memcmp(c_vendor.data(), c_blas.data(), nn * sizeof(T)) != 0) {
    row.valid = false;
    row.why = "vendor engine differs from OpenBLAS alone";
  }
  // |A||B| bound for the tiled engine.
  for (index_t i = 0; i < n && row.valid; i += std::max<index_t>(1, n / 17))
    for (index_t j = 0; j < n; j += std::max<index_t>(1, n / 13)) {
      long double exact = 0, mag = 0;
      for (index_t l = 0; l < n; ++l) {
        exact += static_cast<long double>(a[i * n + l]) * b[l * n + j];
        mag += std::fabs(static_cast<long double>(a[i * n + l]) * b[l * n + j]);
      }
      const long double tol = 4 * (n + 1) * std::numeric_limits<T>::epsilon() * mag;
      if (std::fabs(c_tiled[i * n + j] - exact) > tol || std::fabs(c_vendor[i * n + j] - exact) > tol) {
        row.valid = false;
        row.why = "C(" + std::to_string(i) + "," + std::to_string(j) + ") off the exact product";
        break;
      }
    }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<index_t> sizes = {1000};
  int reps = 10;
  std::string dtype = "float64", json;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tessera_bench_gemm_host: %s needs a value\n", f.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (f == "--n") {
      sizes.clear();
      std::stringstream ss(value());
      for (std::string s; std::getline(ss, s, ',');) sizes.push_back(std::atoll(s.c_str()));
    } else if (f == "--reps") {
      reps = std::atoi(value().c_str());
    } else if (f == "--dtype") {
      dtype = value();
    } else if (f == "--json") {
      json = value();
    } else if (f == "-h" || f == "--help") {
      std::puts("tessera_bench_gemm_host [--n N[,N...]] [--reps R (10)] [--dtype float64|float32] [--json FILE]");
      return 0;
    } else {
      std::fprintf(stderr, "tessera_bench_gemm_host: unknown flag %s\n", f.c_str());
      return 2;
    }
  }
  if (reps < 1 || (dtype != "float64" && dtype != "float32") ||
      std::any_of(sizes.begin(), sizes.end(), [](index_t n) { return n < 1 || n > 46340; })) {
    std::fprintf(stderr, "tessera_bench_gemm_host: --reps >= 1, --dtype float64|float32, 1 <= N <= 46340\n");
    return 2;
  }
  bool all = true;
  std::string rows;
  for (index_t n : sizes) {
    const Row r = dtype == "float64" ? run<double>(n, reps) : run<float>(n, reps);
    const double flop = 2.0 * n * n * n;
    std::printf("%s: tessera_bench_gemm_host %s n=%lld threads=%d vendor=%.3f GFLOP/s tiled=%.3f GFLOP/s "
                "openblas_alone=%.3f GFLOP/s vendor/alone=%.3f (median of pairs)%s%s\n",
                r.valid ? "VALID" : "INVALID", dtype.c_str(), static_cast<long long>(n), omp_get_max_threads(),
                flop / r.vendor_s / 1e9, flop / r.tiled_s / 1e9, flop / r.blas_s / 1e9, r.ratio,
                r.valid ? "" : " ", r.why.c_str());
    all = all && r.valid;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s{\"n\": %lld, \"dtype\": \"%s\", \"threads\": %d, \"reps\": %d, \"vendor_s\": %.9g, "
                  "\"tiled_s\": %.9g, \"openblas_alone_s\": %.9g, \"alone_over_vendor\": %.4f, \"valid\": %s}",
                  rows.empty() ? "" : ", ", static_cast<long long>(n), dtype.c_str(), omp_get_max_threads(), reps,
                  r.vendor_s, r.tiled_s, r.blas_s, r.ratio, r.valid ? "true" : "false");
    rows += buf;
  }
  std::printf("# summary: %zu rows: %s\n", sizes.size(), all ? "VALID" : "INVALID");
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\"benchmark\": \"tessera_bench_gemm_host\", \"openblas\": \"" << OPENBLAS_VERSION << "\", \"rows\": [" << rows
        << "]}\n";
    if (!out) {
      std::fprintf(stderr, "tessera_bench_gemm_host: cannot write %s\n", json.c_str());
      return 1;
    }
  }
  return all ? 0 : 1;
}
