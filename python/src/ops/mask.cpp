// Selections and counts by a mask program (compiled by nvcc where the build has CUDA: the program
// runs inside the select and count kernels).
#include <string>
#include <type_traits>

#include "../ops.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera::python::ops {

template <class T>
MaskProgram<T> make_mask_program(const std::vector<MaskStep>& steps) {
  MaskProgram<T> program;
  if (steps.size() > static_cast<std::size_t>(MaskProgram<T>::kMaxSteps))
    throw UsageError("a mask of more than " + std::to_string(MaskProgram<T>::kMaxSteps) +
                     " comparisons and operators is not supported");
  int depth = 0;
  for (const MaskStep& step : steps) {
    auto& out = program.steps[program.count++];
    out.op = step.op;
    out.value = step.value;
    out.pred.kind = step.kind;
    if constexpr (std::is_integral_v<T>) {
      out.pred.a = static_cast<T>(step.integer);
    } else {
      out.pred.a = static_cast<T>(step.real);
    }
    switch (step.op) {
      case MaskOp::compare:
      case MaskOp::constant: ++depth; break;
      case MaskOp::negate: if (depth < 1) depth = -100; break;
      default: depth = depth < 2 ? -100 : depth - 1; break;
    }
  }
  if (depth != 1) throw UsageError("a mask program must leave exactly one value");
  return program;
}

template <class T>
DistArray<T> compress(const DistArray<T>& a, const std::vector<MaskStep>& mask) {
  return filter(a, make_mask_program<T>(mask));
}

template <class T>
index_t count(const DistArray<T>& a, const std::vector<MaskStep>& mask) {
  return count_if(a, make_mask_program<T>(mask));
}

#define TESSERA_PYTHON_MASK(T)                                                             \
  template MaskProgram<T> make_mask_program<T>(const std::vector<MaskStep>&);              \
  template DistArray<T> compress<T>(const DistArray<T>&, const std::vector<MaskStep>&);    \
  template index_t count<T>(const DistArray<T>&, const std::vector<MaskStep>&);
TESSERA_PYTHON_FOR_EACH_ORDERED_DTYPE(TESSERA_PYTHON_MASK)

}  // namespace tessera::python::ops
