// The one place where C++ element types meet MPI datatypes.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace tessera {

template <class T>
struct MpiType;  // undefined for types MPI cannot carry as one element

template <> struct MpiType<std::int32_t> { static MPI_Datatype get() { return MPI_INT32_T; } };
template <> struct MpiType<std::int64_t> { static MPI_Datatype get() { return MPI_INT64_T; } };
template <> struct MpiType<std::uint32_t> { static MPI_Datatype get() { return MPI_UINT32_T; } };
template <> struct MpiType<std::uint64_t> { static MPI_Datatype get() { return MPI_UINT64_T; } };
template <> struct MpiType<float> { static MPI_Datatype get() { return MPI_FLOAT; } };
template <> struct MpiType<double> { static MPI_Datatype get() { return MPI_DOUBLE; } };
template <> struct MpiType<char> { static MPI_Datatype get() { return MPI_CHAR; } };
template <> struct MpiType<unsigned char> { static MPI_Datatype get() { return MPI_BYTE; } };

template <class T>
MPI_Datatype mpi_type() {
  return MpiType<T>::get();
}

}  // namespace tessera
