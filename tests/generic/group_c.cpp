// Test files compiled as one translation unit, so that the framework's headers are parsed once for
// them (tests/generic/CMakeLists.txt says why).
#include "test_generic_by_key.cpp"
#include "test_generic_sort_by.cpp"
#include "test_generic_gather.cpp"
