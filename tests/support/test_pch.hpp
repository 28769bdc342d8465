// The headers nearly every test translation unit parses: precompiled once per test target
// (tests/CMakeLists.txt, TESSERA_TEST_PRECOMPILE_HEADERS), which saves most of a test file's
// compile time at -O0. Tests still include what they use; this list only speeds them up.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/framework/framework.hpp"
