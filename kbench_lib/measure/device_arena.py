"""A device arena: GPU memory that the judge allocates for one candidate's outputs and shares with
that candidate's worker alone, so that outputs never leave the GPU between the two processes.

Why: through files, a worker's outputs go device -> a page-locked /dev/shm file -> the judge's
GPU. On the 8192x8192 problems (five checked cases and five timed samples, 256 MB each) writing the
samples takes about 0.45 s, reading and comparing the cases 0.34 s and re-checking the samples
0.32 s of a 3.1 s judgement. A device-to-device copy of the same 1.3 GB takes about a millisecond.

How: the judge creates the memory with CUDA's virtual memory management API (``cuMemCreate``,
exportable as a POSIX file descriptor), zeroes it and maps it into its own address space. The
descriptor goes to the worker like its message pipe (inherited at its start, never named in a
file); the worker maps the same memory into its address space before any candidate code runs,
then closes the descriptor. Legacy CUDA IPC (``cudaIpcGetMemHandle``) cannot be used: its handles do
not open across PID namespaces, and a worker runs in its own.

What this does not change (threat #13, #15): the worker still writes each result file, now
holding the header and, for each tensor it placed in the arena, the arena offset instead of the
bytes; the judge reads the header as untrusted data and checks every range against the arena's
size (:mod:`kbench_lib.measure.tensorfile`). The judge reads the arena only after the worker and every
process of its session have ended, so nothing can change the bytes while they are compared, and
timed samples are still checked against the fingerprints reported the moment they were written.
The arena holds nothing but what this candidate's worker wrote: it is zeroed before it is shared,
is never given to another candidate, and lives in its own allocation (unlike the caching
allocator's blocks, a mapping of it reaches no other tensor of the judge). The memory is given back
when the last tensor viewing it is gone.

Everything here is best effort: no driver, no support for the API, too little free memory, or any
failing call means no arena, and outputs travel through files as before.
"""
from __future__ import annotations

import ctypes
import os
import threading

import torch

ALIGN = 512  # offsets of tensors in the arena (vectorised loads want 16 bytes; 512 keeps rows of any dtype aligned)
HEADROOM = 0.25  # the arena is only made when it leaves this share of the device's memory free
ENV_FD, ENV_BYTES = "KBENCH_ARENA_FD", "KBENCH_ARENA_BYTES"

_CU_ALLOCATION_PINNED, _CU_HANDLE_POSIX_FD, _CU_LOCATION_DEVICE, _CU_PROT_READWRITE = 1, 1, 1, 3
_CU_ATTR_VMM, _CU_ATTR_POSIX_FD = 102, 103


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):  # CUmemAllocationProp (cuda.h, CUDA 11.0 onwards)
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_LIB: list = []
_LOCK = threading.Lock()
_u64, _size, _vp, _int = ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
_SIGNATURES = {
    "cuDeviceGet": [ctypes.POINTER(_int), _int],
    "cuDeviceGetAttribute": [ctypes.POINTER(_int), _int, _int],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(_vp), _int],
    "cuCtxPushCurrent_v2": [_vp],
    "cuCtxPopCurrent_v2": [ctypes.POINTER(_vp)],
    "cuCtxSynchronize": [],
    "cuMemGetAllocationGranularity": [ctypes.POINTER(_size), ctypes.POINTER(_AllocationProp), _int],
    "cuMemCreate": [ctypes.POINTER(_u64), _size, ctypes.POINTER(_AllocationProp), _u64],
    "cuMemExportToShareableHandle": [_vp, _u64, _int, _u64],
    "cuMemImportFromShareableHandle": [ctypes.POINTER(_u64), _vp, _int],
    "cuMemAddressReserve": [ctypes.POINTER(_u64), _size, _size, _u64, _u64],
    "cuMemMap": [_u64, _size, _size, _u64, _u64],
    "cuMemSetAccess": [_u64, _size, ctypes.POINTER(_AccessDesc), _size],
    "cuMemsetD8_v2": [_u64, ctypes.c_ubyte, _size],
    "cuMemUnmap": [_u64, _size],
    "cuMemAddressFree": [_u64, _size],
    "cuMemRelease": [_u64],
}


def _lib():
    """libcuda's virtual memory calls, or None (no driver: a CPU machine)."""
    with _LOCK:
        if not _LIB:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
                for name, args in _SIGNATURES.items():
                    fn = getattr(lib, name)
                    fn.argtypes, fn.restype = args, ctypes.c_int
                _LIB.append(lib)
            except (OSError, AttributeError):
                _LIB.append(None)
        return _LIB[0]


class ArenaError(RuntimeError):
    pass


def _check(code: int, what: str) -> None:
    if code != 0:
        raise ArenaError(f"{what} failed (CUresult {code})")


class _Context:
    """The device's primary context (torch's) current on this thread while the block runs: driver
    calls act on the current context, and a judge's threads each serve their own GPU."""

    def __init__(self, lib, ordinal: int):
        self.lib, self.ordinal = lib, ordinal

    def __enter__(self):
        dev, ctx = _int(), _vp()
        _check(self.lib.cuDeviceGet(ctypes.byref(dev), self.ordinal), "cuDeviceGet")
        _check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _check(self.lib.cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent")
        self.dev = dev.value
        return self

    def __exit__(self, *exc):
        popped = _vp()
        self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped))
        return False


class _Mapping:
    """One mapping of an allocation (``handle``, given over to it) into this process; unmapped when
    the last tensor viewing it (through :attr:`__cuda_array_interface__`, which torch keeps alive)
    is gone. The handle is released as soon as the memory is mapped: the memory lives while any
    mapping of it, in this process or the other, or an exported descriptor does."""

    def __init__(self, lib, ordinal: int, handle: int, size: int):
        self.lib, self.ordinal, self.size, self.ptr, self._mapped = lib, ordinal, size, 0, False
        try:
            ptr = _u64()
            _check(lib.cuMemAddressReserve(ctypes.byref(ptr), size, 0, 0, 0), "cuMemAddressReserve")
            self.ptr = ptr.value
            _check(lib.cuMemMap(self.ptr, size, 0, handle, 0), "cuMemMap")
            self._mapped = True
            desc = _AccessDesc(_Location(_CU_LOCATION_DEVICE, ordinal), _CU_PROT_READWRITE)
            _check(lib.cuMemSetAccess(self.ptr, size, ctypes.byref(desc), 1), "cuMemSetAccess")
        except BaseException:
            self._unmap()
            raise
        finally:
            lib.cuMemRelease(handle)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.ptr, False), "version": 3, "strides": None}

    def _unmap(self) -> None:
        if self._mapped:
            self.lib.cuMemUnmap(self.ptr, self.size)
            self._mapped = False
        if self.ptr:
            self.lib.cuMemAddressFree(self.ptr, self.size)
            self.ptr = 0

    def release(self) -> None:
        if not self.ptr:
            return
        try:
            with _Context(self.lib, self.ordinal):
                self.lib.cuCtxSynchronize()  # no work of this process still reading or writing it
                self._unmap()
        except ArenaError:
            pass

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - at interpreter exit the driver's bindings may be gone already
            pass


class Arena:
    """A flat ``uint8`` tensor (:attr:`tensor`: this process's mapping of the shared memory) and
    where the next tensor written into it goes (:meth:`take`). ``fd``: on the judge's side, the
    descriptor for the one worker that may map it."""

    def __init__(self, tensor: torch.Tensor, fd: int = -1):
        if tensor.dtype != torch.uint8 or tensor.dim() != 1:
            raise ValueError("an arena is a flat uint8 tensor")
        self.tensor, self.device, self.nbytes, self.fd = tensor, tensor.device, tensor.numel(), fd
        self.used = 0

    @classmethod
    def _over(cls, mapping: _Mapping, device: torch.device, nbytes: int, fd: int = -1) -> "Arena":
        return cls(torch.as_tensor(mapping, device=device)[:nbytes], fd)  # the tensor keeps the mapping alive

    def take(self, n: int) -> int | None:
        """The offset of ``n`` fresh bytes, or None when they do not fit (they go to the file)."""
        start = (self.used + ALIGN - 1) // ALIGN * ALIGN
        if start + n > self.nbytes:
            return None
        self.used = start + n
        return start

    def view(self, offset: int, nbytes: int) -> torch.Tensor:
        return self.tensor[offset: offset + nbytes]

    def close_fd(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _ordinal(device) -> int:
    device = torch.device(device)
    return device.index if device.index is not None else torch.cuda.current_device()


def _prop(ordinal: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type, prop.requestedHandleTypes = _CU_ALLOCATION_PINNED, _CU_HANDLE_POSIX_FD
    prop.location = _Location(_CU_LOCATION_DEVICE, ordinal)
    return prop


def supported(device) -> bool:
    """Whether ``device``'s driver can share memory as a file descriptor."""
    lib = _lib()
    if lib is None or torch.device(device).type != "cuda":
        return False
    try:
        torch.cuda.init()  # the driver initialised (cuInit), as torch does it
    except Exception:  # noqa: BLE001 - no usable CUDA here
        return False
    try:
        dev, vmm, fd_ok = _int(), _int(), _int()
        _check(lib.cuDeviceGet(ctypes.byref(dev), _ordinal(device)), "cuDeviceGet")
        _check(lib.cuDeviceGetAttribute(ctypes.byref(vmm), _CU_ATTR_VMM, dev), "cuDeviceGetAttribute")
        _check(lib.cuDeviceGetAttribute(ctypes.byref(fd_ok), _CU_ATTR_POSIX_FD, dev), "cuDeviceGetAttribute")
        return bool(vmm.value and fd_ok.value)
    except ArenaError:
        return False


def create(device, nbytes: int) -> Arena | None:
    """The judge's side: ``nbytes`` (rounded up to the driver's granularity) of zeroed memory on
    ``device``, mapped here, with a descriptor (:attr:`Arena.fd`) to hand to one worker. None when
    it cannot be made or would leave less than :data:`HEADROOM` of the device free."""
    if nbytes <= 0 or not supported(device):
        return None
    lib, ordinal = _lib(), _ordinal(device)
    device = torch.device("cuda", ordinal)
    try:
        free, total = torch.cuda.mem_get_info(device)
        if free - nbytes < HEADROOM * total:
            return None
        with _Context(lib, ordinal):
            prop = _prop(ordinal)
            gran = _size()
            _check(lib.cuMemGetAllocationGranularity(ctypes.byref(gran), ctypes.byref(prop), 0), "cuMemGetAllocationGranularity")
            size = (nbytes + gran.value - 1) // gran.value * gran.value
            handle = _u64()
            _check(lib.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(prop), 0), "cuMemCreate")
            fd = _int(-1)
            try:
                _check(lib.cuMemExportToShareableHandle(ctypes.byref(fd), handle.value, _CU_HANDLE_POSIX_FD, 0),
                       "cuMemExportToShareableHandle")
            except BaseException:
                lib.cuMemRelease(handle.value)
                raise
            try:
                mapping = _Mapping(lib, ordinal, handle.value, size)  # releases the handle
            except BaseException:
                os.close(fd.value)
                raise
            try:
                _check(lib.cuMemsetD8_v2(mapping.ptr, 0, size), "cuMemsetD8")  # nothing of an earlier user of the pages
                _check(lib.cuCtxSynchronize(), "cuCtxSynchronize")
                os.set_inheritable(fd.value, False)
                return Arena._over(mapping, device, size, fd.value)
            except BaseException:
                os.close(fd.value)
                mapping.release()
                raise
    except (ArenaError, RuntimeError, OSError, TypeError, ValueError):
        return None


def attach(fd: int, nbytes: int, device) -> Arena | None:
    """The worker's side: the arena behind ``fd`` (from :func:`create`, ``nbytes`` long) mapped into
    this process for ``device``; the descriptor is closed either way. None when it cannot be."""
    lib = _lib()
    try:
        if lib is None or torch.device(device).type != "cuda" or nbytes <= 0:
            return None
        torch.cuda.init()
        ordinal = _ordinal(device)
        with _Context(lib, ordinal):
            handle = _u64()
            _check(lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), _CU_HANDLE_POSIX_FD),
                   "cuMemImportFromShareableHandle")
            mapping = _Mapping(lib, ordinal, handle.value, nbytes)  # releases the handle
        return Arena._over(mapping, torch.device("cuda", ordinal), nbytes)
    except (ArenaError, RuntimeError, OSError, TypeError, ValueError, AssertionError):
        return None
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


def attach_from_env(device) -> Arena | None:
    """:func:`attach` for the descriptor a worker inherited (``KBENCH_ARENA_FD``, ``KBENCH_ARENA_BYTES``,
    both taken out of the environment so that candidate code does not find them there)."""
    fd, nbytes = os.environ.pop(ENV_FD, None), os.environ.pop(ENV_BYTES, None)
    try:
        fd_i = int(fd) if fd is not None else -1
    except ValueError:
        return None
    try:
        n = int(nbytes) if nbytes is not None else 0
    except ValueError:
        n = 0
    if fd_i < 0:
        return None
    return attach(fd_i, n, device)  # closes the descriptor, mapped or not
