// A boolean expression of comparisons of one array's elements with scalars, evaluated on the
// device inside the select and count kernels: what `x[(x > 0) & ~(x == 3)]` compiles to. A short
// postfix program over a stack of booleans, trivially copyable so that it travels into a kernel as
// an argument. The Python layer normalises each comparison to the element type first (an integer
// array compared with 2.5, a scalar beyond the type's range), so every step compares in T.
#pragma once

#include <cstdint>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/predicate.hpp"

namespace tessera::python {

enum class MaskOp : std::uint8_t {
  compare,   // push pred(x)
  constant,  // push value
  negate,    // top = !top
  both,      // a, b -> a && b
  either,    // a, b -> a || b
  differ,    // a, b -> a != b
};

// A step as the binding receives it, before it knows the element type.
struct MaskStep {
  MaskOp op = MaskOp::compare;
  PredicateKind kind = PredicateKind::nonzero;
  bool value = false;       // for constant
  double real = 0;          // the compared scalar, for floating-point arrays
  std::int64_t integer = 0; // the compared scalar, for integer arrays
};

template <class T>
struct MaskProgram {
  static constexpr int kMaxSteps = 16;

  struct Step {
    MaskOp op = MaskOp::constant;
    bool value = false;
    Predicate<T> pred{};
  };
  Step steps[kMaxSteps] = {};
  int count = 0;

  TESSERA_HOST_DEVICE bool operator()(T x) const {
    bool stack[kMaxSteps];
    int top = 0;
    for (int i = 0; i < count; ++i) {
      const Step& s = steps[i];
      switch (s.op) {
        case MaskOp::compare: stack[top++] = s.pred(x); break;
        case MaskOp::constant: stack[top++] = s.value; break;
        case MaskOp::negate: stack[top - 1] = !stack[top - 1]; break;
        case MaskOp::both: --top; stack[top - 1] = stack[top - 1] && stack[top]; break;
        case MaskOp::either: --top; stack[top - 1] = stack[top - 1] || stack[top]; break;
        case MaskOp::differ: --top; stack[top - 1] = stack[top - 1] != stack[top]; break;
      }
    }
    return top > 0 && stack[top - 1];
  }
};

}  // namespace tessera::python
