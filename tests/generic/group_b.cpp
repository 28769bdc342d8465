// Test files compiled as one translation unit, so that the framework's headers are parsed once for
// them (tests/generic/CMakeLists.txt says why).
#include "test_generic_collective_plans.cpp"
#include "test_generic_transform_order.cpp"
#include "test_generic_zip_index.cpp"
