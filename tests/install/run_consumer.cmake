# PART=package installs the build tree into PREFIX and checks what a package must carry (versioned
# shared libraries, the licence, program names that cannot clash with system tools). The other
# parts build a project against that prefix and run it under mpiexec: PART=cxx a C++-only consumer,
# PART=cuda a CUDA consumer (where this machine has nvcc; its CMakeLists.txt is docs/API.md's),
# PART=examples the examples (as CUDA where the installed Tessera and this machine have it, so that
# the generic headers are instantiated by nvcc), PART=python the installed Python package and an
# extension built against the prefix. Each part is its own test (tests/install/CMakeLists.txt), so
# that ctest runs them side by side once the package is installed.
if(NOT PART)
  set(PART package)
endif()

if(PART STREQUAL "package")
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}" RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()

# ---- the package -------------------------------------------------------------------------------
foreach(lib tessera_kernels tessera_framework tessera_fft)
  file(GLOB _lib "${PREFIX}/lib*/lib${lib}.so")
  if(NOT _lib)
    message(FATAL_ERROR "lib${lib}.so is not installed under ${PREFIX}")
  endif()
  execute_process(COMMAND objdump -p ${_lib} OUTPUT_VARIABLE _dynamic RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT _dynamic MATCHES "SONAME +lib${lib}\\.so\\.[0-9]+\\.[0-9]+")
    message(FATAL_ERROR "lib${lib}.so has no versioned SONAME")
  endif()
endforeach()
file(GLOB_RECURSE _license "${PREFIX}/share/doc/*/LICENSE")
if(NOT _license)
  message(FATAL_ERROR "no LICENSE installed under ${PREFIX}/share/doc")
endif()
file(READ "${PREFIX}/lib/cmake/Tessera/TesseraConfig.cmake" _config)
if(NOT _config MATCHES "Tessera_LICENSE \"BSD-3-Clause\"")
  message(FATAL_ERROR "the package config does not state the licence")
endif()
file(GLOB _programs RELATIVE "${PREFIX}/bin" "${PREFIX}/bin/*")
foreach(program IN LISTS _programs)
  if(NOT program MATCHES "^tessera[-_]")
    message(FATAL_ERROR "installed program '${program}' is not named tessera-* or tessera_*: it could clash with a system tool")
  endif()
endforeach()

endif()

# ---- a C++-only consumer ---------------------------------------------------------------------------
if(PART STREQUAL "cxx")
file(REMOVE_RECURSE "${CONSUMER_BUILD}")
# The build's own CXX flags: a build with sanitizers (the debug preset) installs libraries that
# need the sanitizer runtime, which the consumers then link as their compiler driver does.
execute_process(COMMAND ${CMAKE_COMMAND} -S "${CONSUMER_SRC}" -B "${CONSUMER_BUILD}" -G "${GENERATOR}"
                        -DCMAKE_PREFIX_PATH=${PREFIX} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the C++-only consumer against the installed Tessera failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${CONSUMER_BUILD}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the C++-only consumer failed (${rc})")
endif()
execute_process(COMMAND ${MPIEXEC} -n 3 ${OVERSUBSCRIBE} "${CONSUMER_BUILD}/consumer" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer: sum 500500, expected 500500; multiples of 3 334, expected 334; max at 1000: ok")
  message(FATAL_ERROR "the C++-only consumer did not run correctly (status ${rc})")
endif()

endif()

# ---- a CUDA consumer ---------------------------------------------------------------------------------
if(PART STREQUAL "cuda")
file(REMOVE_RECURSE "${CUDA_CONSUMER_BUILD}")
# docs/API.md's CMakeLists.txt must be this project's, verbatim: the block that calls find_package.
file(READ "${API_DOC}" _api)
string(REGEX MATCHALL "```cmake\n[^`]*find_package\\(Tessera[^`]*```" _blocks "${_api}")
list(LENGTH _blocks _block_count)
file(READ "${CUDA_CONSUMER_SRC}/CMakeLists.txt" _consumer_lists)
if(NOT _block_count EQUAL 1)
  message(FATAL_ERROR "docs/API.md has ${_block_count} cmake blocks that call find_package(Tessera); expected one")
endif()
string(REGEX REPLACE "^```cmake\n" "" _api_lists "${_blocks}")
string(REGEX REPLACE "```$" "" _api_lists "${_api_lists}")
if(NOT _api_lists STREQUAL _consumer_lists)
  message(FATAL_ERROR "docs/API.md's CMakeLists.txt differs from ${CUDA_CONSUMER_SRC}/CMakeLists.txt:\n${_api_lists}")
endif()
if(NVCC)
  # Nothing but the CUDA compiler is given: the C++ standard and the architectures come from the package.
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${CUDA_CONSUMER_SRC}" -B "${CUDA_CONSUMER_BUILD}" -G "${GENERATOR}"
                          -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CUDA_COMPILER=${NVCC} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the CUDA consumer against the installed Tessera failed (${rc})")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build "${CUDA_CONSUMER_BUILD}" --verbose RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the CUDA consumer failed (${rc}):\n${out}${err}")
  endif()
  # Its compile line: nvcc with C++20, and the installed library's architectures where it has CUDA.
  if(NOT out MATCHES "nvcc[^\n]*-std=c\\+\\+20[^\n]*app\\.cu")
    message(FATAL_ERROR "the CUDA consumer was not compiled by nvcc with -std=c++20:\n${out}")
  endif()
  file(READ "${PREFIX}/lib/cmake/Tessera/TesseraConfig.cmake" _config)
  string(REGEX MATCH "set\\(Tessera_CUDA_ARCHITECTURES \"([^\"]*)\"\\)" _ "${_config}")
  set(_library_architectures "${CMAKE_MATCH_1}")
  if(_config MATCHES "set\\(Tessera_HAVE_CUDA 1\\)")
    foreach(arch IN LISTS _library_architectures)
      string(REGEX REPLACE "-(real|virtual)$" "" arch "${arch}")  # 80-virtual: PTX of compute_80 alone
      if(NOT out MATCHES "arch=compute_${arch}")
        message(FATAL_ERROR "the CUDA consumer was not compiled for the library's architecture ${arch}:\n${out}")
      endif()
    endforeach()
  endif()
  execute_process(COMMAND ${MPIEXEC} -n 2 ${OVERSUBSCRIBE} "${CUDA_CONSUMER_BUILD}/app" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "sum of y 999000.0, expected 999000.0")
    message(FATAL_ERROR "the CUDA consumer did not run correctly (status ${rc})")
  endif()
else()
  message(STATUS "no nvcc: the CUDA consumer is not built")
endif()

endif()

set(cuda_arg)
if(CUDA_COMPILER)
  set(cuda_arg -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER})
endif()

# ---- the examples ------------------------------------------------------------------------------------
if(PART STREQUAL "examples")
file(REMOVE_RECURSE "${EXAMPLES_BUILD}")
# The examples run below; heat_3d and spectral_heat are built and run in the tree (tests/generic,
# tests/fft), and each example compiled by nvcc costs about 10 s of a core.
set(run_examples mean_variance scan_and_filter user_kernel gather_rows spectral_poisson)
execute_process(COMMAND ${CMAKE_COMMAND} -S "${EXAMPLES_SRC}" -B "${EXAMPLES_BUILD}" -G "${GENERATOR}"
                        -DCMAKE_PREFIX_PATH=${PREFIX} ${cuda_arg} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
                        "-DTESSERA_EXAMPLES=${run_examples}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the examples against the installed Tessera failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${EXAMPLES_BUILD}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the examples failed (${rc})")
endif()
# Each example at 1 and 3 ranks (3: blocks of different sizes, a middle rank); the results must not
# depend on the rank count, and must be right:
#   mean_variance: x[i] = i mod 10 over 10^6 elements: mean 4.5, variance 8.25
#   scan_and_filter: the running maximum ends at the last element, 999 + 999/2000 = 999.5 (%g);
#                    half of the 10^6 elements lie in the upper half of their tooth
#   user_kernel: every element counted once (the program checks the total and exits 1 otherwise)
#   gather_rows: A[idx] against the serial one (the program exits 1 where a value differs); the
#                checksum of B the same at every rank count
set(expect_mean_variance "mean 4.5, variance 8.25")
set(expect_scan_and_filter "running maximum ends at 999.5; 500000 elements")
set(expect_user_kernel "histogram of 1000000 values:")
set(expect_gather_rows "2500 rows of 7 gathered from 1001 on")
#   spectral_poisson: the manufactured solution to rounding at every rank count up to the launch's
#                     (the program exits 1 where an error passes its bound)
set(expect_spectral_poisson "spectral_poisson: 33x24x19 slab on 1 ranks")
foreach(example IN LISTS run_examples)
  set(first_histogram)
  foreach(np 1 3)
    execute_process(COMMAND ${MPIEXEC} -n ${np} ${OVERSUBSCRIBE} "${EXAMPLES_BUILD}/${example}" RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err)
    message(STATUS "${np} rank(s): ${out}${err}")
    string(FIND "${out}" "${expect_${example}}" found)
    if(NOT rc EQUAL 0 OR found EQUAL -1)
      message(FATAL_ERROR "example ${example} at ${np} ranks: status ${rc}, expected '${expect_${example}}'")
    endif()
    if(example STREQUAL gather_rows)
      string(REGEX REPLACE ".*(all right, checksum [0-9.]+).*" "\\1" gathered "${out}")
      if(NOT gathered MATCHES "^all right")
        message(FATAL_ERROR "gather_rows at ${np} ranks: ${out}")
      elseif(np EQUAL 1)
        set(first_gathered "${gathered}")
      elseif(NOT gathered STREQUAL first_gathered)
        message(FATAL_ERROR "gather_rows at ${np} ranks: ${gathered}; at 1 rank: ${first_gathered}")
      endif()
    endif()
    if(example STREQUAL user_kernel)
      string(REGEX REPLACE ".*values:" "" histogram "${out}")
      if(np EQUAL 1)
        set(first_histogram "${histogram}")
      elseif(NOT histogram STREQUAL first_histogram)
        message(FATAL_ERROR "user_kernel at ${np} ranks counted${histogram}, at 1 rank${first_histogram}")
      endif()
    endif()
  endforeach()
endforeach()

endif()

# ---- the Python package ------------------------------------------------------------------------------
if(PART STREQUAL "python")
file(REMOVE_RECURSE "${EXTENSION_BUILD}")
# Installed under the prefix where TESSERA_PYTHON_INSTALL_DIR says, importable from there with the
# installed libraries (the extension's RPATH), on two ranks; then an extension of a user's own,
# built against the prefix, runs its functor on a tessera.DistArray's blocks.
if(PYTHON)
  set(_site "${PREFIX}/${PYTHON_DIR}")
  file(GLOB _extension "${_site}/tessera/_tessera*.so")
  if(NOT EXISTS "${_site}/tessera/__init__.py" OR NOT _extension)
    message(FATAL_ERROR "the Python package is not installed in ${_site}/tessera")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${_site}"
                          ${MPIEXEC} -n 2 ${OVERSUBSCRIBE} ${PYTHON} -c
                          "import tessera, sys; assert tessera.__file__.startswith(sys.argv[1]), tessera.__file__; x = tessera.arange(1001); assert int(tessera.sum(x)) == 500500; print('installed package: ok')"
                          "${_site}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "installed package: ok")
    message(FATAL_ERROR "the installed Python package did not import and run from ${_site} (status ${rc})")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${EXTENSION_SRC}" -B "${EXTENSION_BUILD}" -G "${GENERATOR}"
                          -DCMAKE_PREFIX_PATH=${PREFIX} -DPython3_EXECUTABLE=${PYTHON} ${cuda_arg}
                          "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the Python extension example against the installed Tessera failed (${rc})")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build "${EXTENSION_BUILD}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the Python extension example failed (${rc})")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${EXTENSION_BUILD}:${_site}"
                          ${MPIEXEC} -n 3 ${OVERSUBSCRIBE} ${PYTHON} ${EXTENSION_SRC}/use_huber.py
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "huber_sum")
    message(FATAL_ERROR "the Python extension example did not run correctly (status ${rc})")
  endif()
endif()
endif()
