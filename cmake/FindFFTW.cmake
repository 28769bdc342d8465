# Finds FFTW3 (double and single precision) and, where present, its MPI libraries.
# Defines FFTW_FOUND, the imported targets FFTW::fftw3 and FFTW::fftw3f, and FFTW_MPI_FOUND with
# FFTW::fftw3_mpi and FFTW::fftw3f_mpi. Looks where pkg-config says (fftw3, fftw3f), then in FFTW_ROOT
# and the system paths.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_FFTW3 QUIET fftw3)
  pkg_check_modules(PC_FFTW3F QUIET fftw3f)
endif()
find_path(FFTW_INCLUDE_DIR fftw3.h HINTS ENV FFTW_ROOT ${PC_FFTW3_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(FFTW_DOUBLE_LIBRARY NAMES fftw3 HINTS ENV FFTW_ROOT ${PC_FFTW3_LIBRARY_DIRS} PATH_SUFFIXES lib lib64)
find_library(FFTW_FLOAT_LIBRARY NAMES fftw3f HINTS ENV FFTW_ROOT ${PC_FFTW3F_LIBRARY_DIRS} PATH_SUFFIXES lib lib64)
find_path(FFTW_MPI_INCLUDE_DIR fftw3-mpi.h HINTS ENV FFTW_ROOT ${FFTW_INCLUDE_DIR} PATH_SUFFIXES include)
find_library(FFTW_DOUBLE_MPI_LIBRARY NAMES fftw3_mpi HINTS ENV FFTW_ROOT ${PC_FFTW3_LIBRARY_DIRS} PATH_SUFFIXES lib lib64)
find_library(FFTW_FLOAT_MPI_LIBRARY NAMES fftw3f_mpi HINTS ENV FFTW_ROOT ${PC_FFTW3F_LIBRARY_DIRS} PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(FFTW REQUIRED_VARS FFTW_DOUBLE_LIBRARY FFTW_FLOAT_LIBRARY FFTW_INCLUDE_DIR)
if(FFTW_FOUND)
  foreach(_v IN ITEMS DOUBLE FLOAT)
    set(_name fftw3)
    if(_v STREQUAL FLOAT)
      set(_name fftw3f)
    endif()
    if(NOT TARGET FFTW::${_name})
      add_library(FFTW::${_name} UNKNOWN IMPORTED)
      set_target_properties(FFTW::${_name} PROPERTIES IMPORTED_LOCATION "${FFTW_${_v}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${FFTW_INCLUDE_DIR}")
    endif()
  endforeach()
endif()
set(FFTW_MPI_FOUND FALSE)
if(FFTW_FOUND AND FFTW_MPI_INCLUDE_DIR AND FFTW_DOUBLE_MPI_LIBRARY AND FFTW_FLOAT_MPI_LIBRARY)
  set(FFTW_MPI_FOUND TRUE)
  if(NOT TARGET FFTW::fftw3_mpi)
    add_library(FFTW::fftw3_mpi UNKNOWN IMPORTED)
    set_target_properties(FFTW::fftw3_mpi PROPERTIES IMPORTED_LOCATION "${FFTW_DOUBLE_MPI_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${FFTW_MPI_INCLUDE_DIR}" INTERFACE_LINK_LIBRARIES FFTW::fftw3)
    add_library(FFTW::fftw3f_mpi UNKNOWN IMPORTED)
    set_target_properties(FFTW::fftw3f_mpi PROPERTIES IMPORTED_LOCATION "${FFTW_FLOAT_MPI_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${FFTW_MPI_INCLUDE_DIR}" INTERFACE_LINK_LIBRARIES FFTW::fftw3f)
  endif()
endif()
mark_as_advanced(FFTW_INCLUDE_DIR FFTW_DOUBLE_LIBRARY FFTW_FLOAT_LIBRARY FFTW_MPI_INCLUDE_DIR
  FFTW_DOUBLE_MPI_LIBRARY FFTW_FLOAT_MPI_LIBRARY)
