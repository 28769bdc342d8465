// The element types every open algorithm is tried with beside the built-in numbers: complex<double>
// (16 bytes, h5py's compound {r, i} in HDF5), a 24-byte struct of mixed fields, and a 3-byte struct
// (no 16-byte vectors, no alignment beyond 1), with random values, an associative operation on
// each (exact: integer-valued floating point), an order, and equality.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tessera/framework/io.hpp"
#include "tessera/kernels/config.hpp"

namespace tessera::test {

using Complex = std::complex<double>;

// 24 bytes: a position, a mass, an id and a tag.
struct Record24 {
  double x = 0;
  float mass = 0;
  std::int32_t id = 0;
  std::int64_t tag = 0;
  friend bool operator==(const Record24&, const Record24&) = default;
};
static_assert(sizeof(Record24) == 24);

// 3 bytes, alignment 1: a colour.
struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};
static_assert(sizeof(Rgb) == 3 && alignof(Rgb) == 1);

// 3 bytes whose fields are not named for HDF5: refused by the io functions.
struct Unnamed3 {
  std::uint8_t bytes[3] = {};
};

// The real and imaginary parts of a complex number as an array (as std::complex guarantees), so
// that the functors run on the device too without std::complex's host-only operators.
TESSERA_HOST_DEVICE inline double part(const Complex& z, int i) { return reinterpret_cast<const double*>(&z)[i]; }
TESSERA_HOST_DEVICE inline Complex make_complex(double re, double im) {
  Complex z;
  reinterpret_cast<double*>(&z)[0] = re;
  reinterpret_cast<double*>(&z)[1] = im;
  return z;
}

// Associative, commutative and exact on the values below: the sum of integer-valued parts; for
// Record24 the sums of x and tag (wrapping), the largest mass and the xor of ids; for Rgb the
// byte-wise sums modulo 256.
struct Combine {
  static constexpr bool commutative = true;
  TESSERA_HOST_DEVICE Complex operator()(const Complex& a, const Complex& b) const {
    return make_complex(part(a, 0) + part(b, 0), part(a, 1) + part(b, 1));
  }
  TESSERA_HOST_DEVICE Record24 operator()(const Record24& a, const Record24& b) const {
    Record24 c;
    c.x = a.x + b.x;
    c.mass = a.mass > b.mass ? a.mass : b.mass;
    c.id = a.id ^ b.id;
    c.tag = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.tag) + static_cast<std::uint64_t>(b.tag));
    return c;
  }
  TESSERA_HOST_DEVICE Rgb operator()(const Rgb& a, const Rgb& b) const {
    return Rgb{static_cast<std::uint8_t>(a.r + b.r), static_cast<std::uint8_t>(a.g + b.g), static_cast<std::uint8_t>(a.b + b.b)};
  }
};

template <class T>
T identity_of() {
  if constexpr (std::is_same_v<T, Record24>) {
    Record24 r;
    r.mass = -1e30f;
    return r;
  } else {
    return T{};
  }
}

// A key of each value (for predicates, orders and histograms): an integer in [0, 100).
struct KeyOf {
  TESSERA_HOST_DEVICE int operator()(const Complex& z) const { return static_cast<int>(part(z, 0)) % 100; }
  TESSERA_HOST_DEVICE int operator()(const Record24& r) const { return r.id % 100; }
  TESSERA_HOST_DEVICE int operator()(const Rgb& c) const { return c.r % 100; }
};

struct EvenKey {
  TESSERA_HOST_DEVICE bool operator()(const Complex& z) const { return KeyOf{}(z) % 2 == 0; }
  TESSERA_HOST_DEVICE bool operator()(const Record24& r) const { return KeyOf{}(r) % 2 == 0; }
  TESSERA_HOST_DEVICE bool operator()(const Rgb& c) const { return KeyOf{}(c) % 2 == 0; }
};

// A binner on the key: keys 10 .. 89 in bins 0 .. 79, the ones below and above counted apart.
struct BinByKey {
  TESSERA_HOST_DEVICE int operator()(const Complex& z) const { return bin(KeyOf{}(z)); }
  TESSERA_HOST_DEVICE int operator()(const Record24& r) const { return bin(KeyOf{}(r)); }
  TESSERA_HOST_DEVICE int operator()(const Rgb& c) const { return bin(KeyOf{}(c)); }
  TESSERA_HOST_DEVICE static int bin(int key) { return key < 10 ? -1 : key >= 90 ? -2 : key - 10; }
};

// A strict weak order by key.
struct ByKey {
  template <class T>
  TESSERA_HOST_DEVICE bool operator()(const T& a, const T& b) const {
    return KeyOf{}(a) < KeyOf{}(b);
  }
};

// A map from the type to itself.
struct Twist {
  TESSERA_HOST_DEVICE Complex operator()(const Complex& z) const { return make_complex(-part(z, 1), part(z, 0) + 1); }
  TESSERA_HOST_DEVICE Record24 operator()(const Record24& r) const {
    Record24 o = r;
    o.x = r.x * 2;
    o.id = r.id + 1;
    return o;
  }
  TESSERA_HOST_DEVICE Rgb operator()(const Rgb& c) const { return Rgb{c.b, c.r, c.g}; }
};

// Random values: complex numbers with integer parts in [0, 1000), records with integer-valued x,
// masses in [0, 1), ids in [0, 1000) and any tag; colours of any bytes.
template <class T>
std::vector<T> random_elements(index_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (T& e : v) {
    if constexpr (std::is_same_v<T, Complex>) {
      e = Complex(static_cast<double>(gen() % 1000), static_cast<double>(gen() % 1000));
    } else if constexpr (std::is_same_v<T, Record24>) {
      e.x = static_cast<double>(gen() % 100000) - 50000;
      e.mass = static_cast<float>(gen() % 1024) / 1024.0f;
      e.id = static_cast<std::int32_t>(gen() % 1000);
      e.tag = static_cast<std::int64_t>(gen());
    } else if constexpr (std::is_same_v<T, Rgb>) {
      const auto bits = gen();
      e = Rgb{static_cast<std::uint8_t>(bits), static_cast<std::uint8_t>(bits >> 8), static_cast<std::uint8_t>(bits >> 16)};
    } else {
      const auto bits = gen();
      std::memcpy(&e, &bits, sizeof(T) < sizeof bits ? sizeof(T) : sizeof bits);
    }
  }
  return v;
}

}  // namespace tessera::test

// The HDF5 compounds of the structs (Unnamed3 has none).
TESSERA_HDF5_FIELDS(tessera::test::Record24, x, mass, id, tag)
TESSERA_HDF5_FIELDS(tessera::test::Rgb, r, g, b)
