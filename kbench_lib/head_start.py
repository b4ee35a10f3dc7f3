"""The end-to-end clock's head start: a kernel that fills every SM of the device and spins for a
fixed time, launched just before the timed call's start event.

Why: from an idle GPU the start event runs at once, while the call's first kernel arrives only
after the host has gone through Python, the dispatcher and the launch (10-20 us on the H100 here).
That host path was inside every end-to-end time: +670% for a 3 us kernel, +9% at 174 us. With a
head start of ``HEAD_START_US`` the host issues the call while the GPU is still busy, as in a
program that keeps its GPU fed; host time beyond the head start still shows as gaps.

Why it must fill the device: a head start made of an ordinary kernel would let a call that puts
its work on another stream (a high-priority one, say) run that work beside the spin, before the
start event, and so hide it. This kernel is launched with as many blocks of 1024 threads as the
occupancy API says fit on each SM, so every warp slot of every SM is taken while it spins: no
block of any other kernel, from any stream, can be resident until it ends (``fills_device`` says
whether the occupancy reached the SM's thread limit; timing uses no head start otherwise).

The kernel is hand-written PTX, loaded and launched through the driver API (libcuda, ctypes): no
compiler at run time, nothing of torch's on the launch path a candidate could replace. The
functions are bound when ``HeadStart`` is built, which the worker does before any candidate code
is imported.
"""
from __future__ import annotations

import ctypes

HEAD_START_US = 40.0
HEAD_START_LADDER = (1, 2, 4, 8, 16)  # the lengths timing chooses among, in units of HEAD_START_US (timing.choose_spins)
THREADS = 1024

PTX = r"""
.version 7.0
.target sm_70
.address_size 64

// spins until the global nanosecond timer has advanced by ns since the block started
.visible .entry kbench_spin(.param .u64 ns)
{
    .reg .pred  %p<2>;
    .reg .b64   %rd<6>;

    ld.param.u64    %rd1, [ns];
    mov.u64         %rd2, %globaltimer;
$Lspin:
    mov.u64         %rd3, %globaltimer;
    sub.s64         %rd4, %rd3, %rd2;
    setp.lt.u64     %p1, %rd4, %rd1;
    @%p1 bra        $Lspin;
    ret;
}
"""


class HeadStartError(RuntimeError):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        raise HeadStartError(f"{what} failed with CUresult {result}")


class HeadStart:
    """``hs(stream_handle)`` launches the device-filling spin of ``us`` microseconds on that stream
    (a ``cudaStream_t`` as an int: ``torch.cuda.current_stream().cuda_stream``). Build it with the
    device's context current (after torch has initialised CUDA on it)."""

    def __init__(self, sm_count: int, max_threads_per_sm: int, us: float = HEAD_START_US):
        self.us = float(us)
        self.sm_count, self.max_threads_per_sm = sm_count, max_threads_per_sm
        lib = ctypes.CDLL("libcuda.so.1")
        self._launch = lib.cuLaunchKernel
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        _check(lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX.encode())), "cuModuleLoadData")
        _check(lib.cuModuleGetFunction(ctypes.byref(func), module, b"kbench_spin"), "cuModuleGetFunction")
        per_sm = ctypes.c_int()
        _check(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(per_sm), func, THREADS, ctypes.c_size_t(0)),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        self._module, self._func = module, func
        self.blocks_per_sm = per_sm.value
        self.blocks = per_sm.value * sm_count
        self.fills_device = per_sm.value * THREADS >= max_threads_per_sm
        self._ns = ctypes.c_ulonglong(int(self.us * 1e3))
        self._args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(self._ns), ctypes.c_void_p))

    def __call__(self, stream_handle: int) -> None:
        _check(self._launch(self._func, ctypes.c_uint(self.blocks), ctypes.c_uint(1), ctypes.c_uint(1),
                            ctypes.c_uint(THREADS), ctypes.c_uint(1), ctypes.c_uint(1), ctypes.c_uint(0),
                            ctypes.c_void_p(stream_handle), self._args, None), "cuLaunchKernel")


def for_device(device) -> HeadStart:
    """The head start for a CUDA ``torch.device`` (its context is created if need be)."""
    import torch

    torch.empty(1, device=device)  # the primary context, current on this thread
    props = torch.cuda.get_device_properties(device)
    return HeadStart(props.multi_processor_count, props.max_threads_per_multi_processor)
