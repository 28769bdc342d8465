# Finds OpenBLAS: its CBLAS header (cblas.h beside openblas_config.h) and library. Defines
# OpenBLAS_FOUND and the imported target OpenBLAS::OpenBLAS. Looks where OpenBLAS's own package
# file says (OpenBLASConfig.cmake: Debian's libopenblas-dev, or a source build's install), where
# pkg-config says (openblas), then in OpenBLAS_ROOT / OPENBLAS_HOME and the system paths, including
# Debian's per-variant directories (openblas-pthread, openblas-openmp, openblas-serial; the
# alternatives system picks which one libopenblas.so.0 loads at run time).
if(NOT OpenBLAS_INCLUDE_DIR OR NOT OpenBLAS_LIBRARY)
  find_package(OpenBLAS CONFIG QUIET)
  set(_openblas_library_dirs "")
  foreach(_lib IN LISTS OpenBLAS_LIBRARIES)
    get_filename_component(_dir "${_lib}" DIRECTORY)
    list(APPEND _openblas_library_dirs "${_dir}")
  endforeach()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(PC_OPENBLAS QUIET openblas)
  endif()
endif()
set(_openblas_suffixes openblas-pthread openblas-openmp openblas-serial openblas)
find_path(OpenBLAS_INCLUDE_DIR NAMES openblas_config.h
  HINTS ${OpenBLAS_INCLUDE_DIRS} ${PC_OPENBLAS_INCLUDE_DIRS} ENV OpenBLAS_ROOT ENV OPENBLAS_HOME
  PATH_SUFFIXES ${_openblas_suffixes} include ${_openblas_suffixes})
find_library(OpenBLAS_LIBRARY NAMES openblas
  HINTS ${_openblas_library_dirs} ${PC_OPENBLAS_LIBRARY_DIRS} ENV OpenBLAS_ROOT ENV OPENBLAS_HOME
  PATH_SUFFIXES ${_openblas_suffixes} lib lib64)
if(OpenBLAS_INCLUDE_DIR AND NOT EXISTS "${OpenBLAS_INCLUDE_DIR}/cblas.h")
  set(OpenBLAS_INCLUDE_DIR OpenBLAS_INCLUDE_DIR-NOTFOUND CACHE PATH "OpenBLAS's headers (cblas.h)" FORCE)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLAS REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR)
if(OpenBLAS_FOUND AND NOT TARGET OpenBLAS::OpenBLAS)
  add_library(OpenBLAS::OpenBLAS UNKNOWN IMPORTED)
  set_target_properties(OpenBLAS::OpenBLAS PROPERTIES IMPORTED_LOCATION "${OpenBLAS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIR}")
endif()
mark_as_advanced(OpenBLAS_INCLUDE_DIR OpenBLAS_LIBRARY)
