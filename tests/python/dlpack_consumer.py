"""A DLPack consumer written for the tests, with ctypes only: takes a producer's capsule (the
unversioned "dltensor" or DLPack 1.0's "dltensor_versioned"), reads its tensor and copies GPU memory
to the host with the CUDA runtime's cudaMemcpy. For machines without CuPy or PyTorch, and to hold
tessera's exporter to the C ABI rather than to one library's reading of it."""

import ctypes
import ctypes.util

import numpy as np


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32), ("dtype", DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class ManagedTensor(ctypes.Structure):
    pass


ManagedTensor._fields_ = [("dl_tensor", Tensor), ("manager_ctx", ctypes.c_void_p),
                          ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(ManagedTensor)))]


class Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class ManagedTensorVersioned(ctypes.Structure):
    pass


ManagedTensorVersioned._fields_ = [("version", Version), ("manager_ctx", ctypes.c_void_p),
                                   ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(ManagedTensorVersioned))),
                                   ("flags", ctypes.c_uint64), ("dl_tensor", Tensor)]

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

_TYPES = {(0, 32): np.int32, (0, 64): np.int64, (2, 32): np.float32, (2, 64): np.float64,
          (5, 64): np.complex64, (5, 128): np.complex128}
_cudart = None


def cudart():
    global _cudart
    if _cudart is None:
        names = [ctypes.util.find_library("cudart"), "libcudart.so", "libcudart.so.13", "libcudart.so.12",
                 "/usr/local/cuda/lib64/libcudart.so"]
        for name in names:
            if not name:
                continue
            try:
                _cudart = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if _cudart is None:
            raise RuntimeError("no CUDA runtime library to copy device memory with")
    return _cudart


def consume(producer, versioned=False, stream=None):
    """(NumPy copy of the tensor, device (type, id), capsule name, the data pointer)."""
    kwargs = {"stream": stream}
    if versioned:
        kwargs["max_version"] = (1, 0)
    capsule = producer.__dlpack__(**kwargs)
    if _api.PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        name, used, kind = b"dltensor_versioned", b"used_dltensor_versioned", ManagedTensorVersioned
    elif _api.PyCapsule_IsValid(capsule, b"dltensor"):
        name, used, kind = b"dltensor", b"used_dltensor", ManagedTensor
    else:
        raise TypeError("not a DLPack capsule")
    managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, name), ctypes.POINTER(kind))
    _api.PyCapsule_SetName(capsule, used)
    t = managed.contents.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    dtype = _TYPES[(t.dtype.code, t.dtype.bits)]
    out = np.empty(shape, dtype=dtype)
    pointer = (t.data or 0) + t.byte_offset
    if out.size:
        if t.device.device_type == 2:  # kDLCUDA: cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost)
            status = cudart().cudaMemcpy(ctypes.c_void_p(out.ctypes.data), ctypes.c_void_p(pointer),
                                         ctypes.c_size_t(out.nbytes), 2)
            if status != 0:
                raise RuntimeError("cudaMemcpy failed with status %d" % status)
        else:
            ctypes.memmove(out.ctypes.data, pointer, out.nbytes)
    device = (t.device.device_type, t.device.device_id)
    if managed.contents.deleter:
        managed.contents.deleter(managed)
    return out, device, name.decode(), pointer
