// Test files compiled as one translation unit, so that the framework's headers are parsed once for
// them (tests/generic/CMakeLists.txt says why).
#include "test_generic_reduce.cpp"
#include "test_generic_arithmetic.cpp"
#include "test_generic_scan_filter.cpp"
