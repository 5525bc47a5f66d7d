"""The few CUDA driver calls that share GPU memory between two processes and order their streams.

PyTorch's own sharing of CUDA tensors (``torch.multiprocessing``) uses legacy CUDA IPC handles, which the driver
refuses between processes in different PID namespaces, and the trusted evaluator and the submission each run in a
sandbox of their own. The virtual memory management API instead exports an allocation as a POSIX file descriptor;
that descriptor travels over a Unix socket (``SCM_RIGHTS``) into any namespace, and the importer maps the same
physical memory at an address of its own. Stream memory operations (``cuStreamWaitValue32`` /
``cuStreamWriteValue32``) on a shared word then order one process's stream after the other's with no host in
between.

Only ``ctypes`` and ``libcuda`` (which every CUDA machine has): no compiler and no extra package. Nothing here runs
at import; :class:`Driver` opens the library when first built.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass
from typing import Any

_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_LOCATION_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READWRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_GRANULARITY_MINIMUM = 0
_WAIT_GEQ = 0  # CU_STREAM_WAIT_VALUE_GEQ: (int32)(*addr - value) >= 0
_ATTR_POSIX_FD = 103  # CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
_ATTR_VMM = 102  # CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
_HOST_PORTABLE_DEVICEMAP = 0x01 | 0x02  # CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP


class CudaError(RuntimeError):
    """A driver call failed; the message names the call and the driver's error."""


class _Location(ctypes.Structure):
    _fields_ = (("type", ctypes.c_int), ("id", ctypes.c_int))


class _AllocFlags(ctypes.Structure):
    _fields_ = (
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    )


class _AllocationProp(ctypes.Structure):
    # CUmemAllocationProp: 32 bytes (type@0, handle types@4, location@8, win32 metadata@16, flags@24)
    _fields_ = (
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    )


class _AccessDesc(ctypes.Structure):
    _fields_ = (("location", _Location), ("flags", ctypes.c_int))


class Driver:
    """A thin handle on ``libcuda``; every method raises :class:`CudaError` with the call's name on failure."""

    def __init__(self, library: str = "libcuda.so.1") -> None:
        try:
            self._lib = ctypes.CDLL(library)
        except OSError as exc:
            raise CudaError(f"the CUDA driver library {library} could not be loaded: {exc}") from None
        self._call("cuInit", ctypes.c_uint(0))

    def _call(self, name: str, *args: Any) -> None:
        fn = getattr(self._lib, name)
        rc = fn(*args)
        if rc != 0:
            text = ctypes.c_char_p()
            self._lib.cuGetErrorString(rc, ctypes.byref(text))
            detail = text.value.decode() if text.value else f"error {rc}"
            raise CudaError(f"{name} failed: {detail} ({rc})")

    def device(self, ordinal: int = 0) -> int:
        dev = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(dev), ctypes.c_int(ordinal))
        return dev.value

    def attribute(self, attr: int, device: int) -> int:
        value = ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(value), ctypes.c_int(attr), ctypes.c_int(device))
        return value.value

    def supports_sharing(self, device: int) -> bool:
        """Whether this device can export memory as a file descriptor (virtual memory management)."""
        return bool(self.attribute(_ATTR_VMM, device)) and bool(self.attribute(_ATTR_POSIX_FD, device))

    def use_primary_context(self, device: int) -> None:
        """Make the device's primary context (the one the CUDA runtime and PyTorch use) current on this thread."""
        ctx = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), ctypes.c_int(device))
        self._call("cuCtxSetCurrent", ctx)

    def _prop(self, device: int) -> _AllocationProp:
        prop = _AllocationProp()
        prop.type = _PINNED
        prop.requestedHandleTypes = _POSIX_FD
        prop.location = _Location(_LOCATION_DEVICE, device)
        return prop

    def granularity(self, device: int) -> int:
        size = ctypes.c_size_t()
        prop = self._prop(device)
        self._call("cuMemGetAllocationGranularity", ctypes.byref(size), ctypes.byref(prop), _GRANULARITY_MINIMUM)
        return size.value

    def create(self, size: int, device: int) -> int:
        handle = ctypes.c_ulonglong()
        prop = self._prop(device)
        size_t = ctypes.c_size_t(size)
        self._call("cuMemCreate", ctypes.byref(handle), size_t, ctypes.byref(prop), ctypes.c_ulonglong(0))
        return handle.value

    def export_fd(self, handle: int) -> int:
        fd = ctypes.c_int(-1)
        self._call(
            "cuMemExportToShareableHandle",
            ctypes.byref(fd),
            ctypes.c_ulonglong(handle),
            ctypes.c_int(_POSIX_FD),
            ctypes.c_ulonglong(0),
        )
        return fd.value

    def import_fd(self, fd: int) -> int:
        handle = ctypes.c_ulonglong()
        self._call(
            "cuMemImportFromShareableHandle",
            ctypes.byref(handle),
            ctypes.c_void_p(fd),
            ctypes.c_int(_POSIX_FD),
        )
        return handle.value

    def map(self, handle: int, size: int, device: int) -> int:
        """Reserve an address range, map the allocation there, and allow this device to read and write it."""
        ptr = ctypes.c_ulonglong()
        self._call(
            "cuMemAddressReserve",
            ctypes.byref(ptr),
            ctypes.c_size_t(size),
            ctypes.c_size_t(0),
            ctypes.c_ulonglong(0),
            ctypes.c_ulonglong(0),
        )
        try:
            self._call(
                "cuMemMap", ctypes.c_ulonglong(ptr.value), ctypes.c_size_t(size), ctypes.c_size_t(0),
                ctypes.c_ulonglong(handle), ctypes.c_ulonglong(0),
            )  # fmt: skip
            desc = _AccessDesc(_Location(_LOCATION_DEVICE, device), _READWRITE)
            self._call(
                "cuMemSetAccess", ctypes.c_ulonglong(ptr.value), ctypes.c_size_t(size), ctypes.byref(desc),
                ctypes.c_size_t(1),
            )  # fmt: skip
        except CudaError:
            self._lib.cuMemUnmap(ctypes.c_ulonglong(ptr.value), ctypes.c_size_t(size))
            self._lib.cuMemAddressFree(ctypes.c_ulonglong(ptr.value), ctypes.c_size_t(size))
            raise
        return ptr.value

    def unmap(self, ptr: int, size: int) -> None:
        self._lib.cuMemUnmap(ctypes.c_ulonglong(ptr), ctypes.c_size_t(size))
        self._lib.cuMemAddressFree(ctypes.c_ulonglong(ptr), ctypes.c_size_t(size))

    def release(self, handle: int) -> None:
        self._lib.cuMemRelease(ctypes.c_ulonglong(handle))

    def wait_value(self, stream: int, ptr: int, value: int) -> None:
        """Queue on ``stream``: wait until the 32-bit word at ``ptr`` reaches ``value`` (wrap-around aware)."""
        self._call(
            "cuStreamWaitValue32_v2", ctypes.c_void_p(stream), ctypes.c_ulonglong(ptr), ctypes.c_uint32(value),
            ctypes.c_uint(_WAIT_GEQ),
        )  # fmt: skip

    def host_register(self, ptr: int, size: int) -> int:
        """Pin ``size`` bytes of this process's memory at ``ptr`` (page-aligned) and map them for the GPU, so that a
        stream can wait on a word there; returns the address the GPU uses."""
        self._call("cuMemHostRegister_v2", ctypes.c_void_p(ptr), ctypes.c_size_t(size),
                   ctypes.c_uint(_HOST_PORTABLE_DEVICEMAP))  # fmt: skip
        device_ptr = ctypes.c_ulonglong()
        self._call("cuMemHostGetDevicePointer_v2", ctypes.byref(device_ptr), ctypes.c_void_p(ptr), ctypes.c_uint(0))
        return device_ptr.value

    def write_value(self, stream: int, ptr: int, value: int) -> None:
        """Queue on ``stream``: write ``value`` to the 32-bit word at ``ptr`` once the work before it is done."""
        self._call(
            "cuStreamWriteValue32_v2", ctypes.c_void_p(stream), ctypes.c_ulonglong(ptr), ctypes.c_uint32(value),
            ctypes.c_uint(0),
        )  # fmt: skip


@dataclass
class SharedMemory:
    """One allocation of device memory that two processes map: ``ptr`` is its address in this process."""

    driver: Driver
    handle: int
    ptr: int
    size: int
    fd: int = -1
    """The exportable descriptor (creator side, until sent); -1 after :meth:`close_fd` or on the importer side."""

    @classmethod
    def create(cls, driver: Driver, size: int, device: int) -> SharedMemory:
        gran = driver.granularity(device)
        size = max(gran, -(-size // gran) * gran)
        handle = driver.create(size, device)
        try:
            ptr = driver.map(handle, size, device)
            fd = driver.export_fd(handle)
        except CudaError:
            driver.release(handle)
            raise
        return cls(driver, handle, ptr, size, fd)

    @classmethod
    def open(cls, driver: Driver, fd: int, size: int, device: int) -> SharedMemory:
        """Map memory another process exported; ``fd`` is closed here (the mapping keeps the memory alive)."""
        try:
            handle = driver.import_fd(fd)
        finally:
            os.close(fd)
        try:
            ptr = driver.map(handle, size, device)
        except CudaError:
            driver.release(handle)
            raise
        return cls(driver, handle, ptr, size)

    def close_fd(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close(self) -> None:
        self.close_fd()
        if self.ptr:
            self.driver.unmap(self.ptr, self.size)
            self.driver.release(self.handle)
            self.ptr = 0


class HostWord:
    """A 32-bit word in a page of host memory that several processes map (``fd``, a memfd they all inherited), which
    this process's GPU can wait on (:meth:`Driver.wait_value` at ``device_ptr``) and which this process's host sets.
    The ranks of one run start their windows on one such word (docs/multigpu.md)."""

    def __init__(self, driver: Driver, fd: int) -> None:
        self._map = mmap.mmap(fd, mmap.PAGESIZE)
        self._word = ctypes.c_uint32.from_buffer(self._map)
        self.device_ptr = driver.host_register(ctypes.addressof(self._word), mmap.PAGESIZE)

    def set(self, value: int) -> None:
        self._word.value = value & 0xFFFFFFFF


class _CudaArray:
    """Just enough of ``__cuda_array_interface__`` for ``torch.as_tensor`` to view raw device memory as bytes."""

    def __init__(self, ptr: int, size: int) -> None:
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (ptr, False), "version": 3}


def byte_tensor(torch: Any, ptr: int, size: int, device: int = 0) -> Any:
    """A ``uint8`` tensor over ``size`` bytes of device memory at ``ptr`` (it does not own the memory)."""
    return torch.as_tensor(_CudaArray(ptr, size), device=f"cuda:{device}")
