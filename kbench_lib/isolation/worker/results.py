"""What the worker writes for the judge: result files (into the out folder opened before the
candidate existed, device tensors into the judge's device arena), the checks every output passes
first, the allocator's poison, and samples of timed outputs."""
from __future__ import annotations

import os

import torch

from ...measure import tensorfile
from ...measure.compare import fingerprint as _fingerprint
from ...measure.tensors import as_output_list

_Tensor = torch.Tensor
_detach = torch.Tensor.detach
_to = torch.Tensor.to
_clone = torch.Tensor.clone
_OOM = torch.OutOfMemoryError
_mem_get_info = torch.cuda.mem_get_info
_memory_reserved = torch.cuda.memory_reserved
_memory_allocated = torch.cuda.memory_allocated
SAMPLE_HEADROOM = 0.25  # device samples leave at least this share of the device's memory free
_write_file = tensorfile.write
_OUT_FD: list[int] = []  # the job's out folder, opened before the candidate is imported (run mode)
_ARENA: list = []  # the judge's device arena for this worker's outputs, mapped before the candidate is imported (or [None])


def _write_tensors(path: str, tree) -> None:
    """A result file, written relative to the ``out`` folder opened before the candidate existed:
    a candidate that swaps ``out`` for a symlink does not redirect the harness's writes. Tensors on
    the device go into the judge's device arena where it gave one and they fit."""
    arena = _ARENA[0] if _ARENA else None
    if _OUT_FD:
        _write_file(os.path.basename(path), tree, dir_fd=_OUT_FD[0], arena=arena)
    else:
        _write_file(path, tree, arena=arena)


def poison_allocator(device: torch.device, nbytes: int) -> None:
    """Fill memory the caching allocator will hand out next with NaN (threat #4, #18): an output
    made with torch.empty and only partly written then holds NaN, not a stale answer."""
    if device.type != "cuda" or nbytes <= 0:
        return
    free, _ = torch.cuda.mem_get_info(device)
    n = min(nbytes, int(free * 0.5)) // 4
    if n > 0:
        block = torch.empty(n, dtype=torch.float32, device=device)
        block.fill_(float("nan"))
        del block  # back to the cache, not to the driver


def _check_output(out, inputs) -> tuple[list | None, str | None, list[str]]:
    """(outputs as plain tensors, error, flags). Only exact torch.Tensor with real storage passes."""
    flags = []
    outs = as_output_list(out)
    for i, o in enumerate(outs):
        if type(o) is not _Tensor:
            return None, f"output {i} is a {type(o).__module__}.{type(o).__name__}, not a torch.Tensor", flags
        if o.is_meta or o.layout != torch.strided:
            return None, f"output {i} has no real strided storage ({o.layout}, meta={o.is_meta})", flags
        try:
            ptr = o.untyped_storage().data_ptr()
        except Exception as e:  # noqa: BLE001 - anything odd about storage is the candidate's failure
            return None, f"output {i} has no accessible storage: {e}", flags
        for j, t in enumerate(inputs):
            if isinstance(t, _Tensor) and t.numel() and ptr and t.untyped_storage().data_ptr() == ptr:
                flags.append(f"output_aliases_input: output {i} shares storage with input {j}")
    return outs, None, flags


def _to_cpu(objs):
    """Copies to the CPU through methods bound before the candidate was imported (threat #13)."""
    return [_to(_detach(o), "cpu", copy=True) if isinstance(o, _Tensor) else o for o in objs]


def _snapshot(outs):
    """A copy of timed outputs for re-checking, taken between timed calls without leaving the GPU
    idle: a clone on the outputs' own device, moved to the CPU once timing is over.

    Why not copy to the CPU at once: a synchronous device-to-host copy leaves the GPU's SMs idle
    (about 50 ms for a 64 MB output), and the next timed call runs slow, as after any idle spell
    (the settle warm-up exists for the same reason; we did not record clocks to show why). Every
    first call on a set is sampled, so the first round pays this most of all: after such copies an
    honest Triton kernel's first round can read about three times its median (a false memoisation
    flag). Sleeping as long as the copy does has the same effect, turning the garbage collector off
    does not; with device clones the first round matches the median within 1%.

    A clone stays in device memory, where the candidate could in principle reach it. Changing it
    later would take work running after the call returns: a host thread or unjoined stream work,
    which the timing phase flags on their own.

    Samples must not take memory the candidate needs: where the clones would leave less than
    ``SAMPLE_HEADROOM`` of the device's memory free (or run out), the copy goes to the CPU. Blocks
    the caching allocator holds unused count as free (this process reuses them): counted as used,
    the clones of a re-measured run or of an earlier timed variant pushed samples to the CPU."""
    devices = {o.device for o in outs if o.is_cuda}
    try:
        for d in devices:
            free, total = _mem_get_info(d)
            free += _memory_reserved(d) - _memory_allocated(d)  # cached blocks are this process's to reuse
            need = sum(o.untyped_storage().nbytes() for o in outs if o.device == d)
            if free - need < SAMPLE_HEADROOM * total:
                return _to_cpu(outs)
        return [_clone(_detach(o)) for o in outs]
    except _OOM:
        return _to_cpu(outs)


def _inputs_after(inputs) -> list:
    """The inputs as the call left them, as fingerprints computed on their device (the judge
    compares them with its own copy; see compare.fingerprint)."""
    return [_fingerprint(t) if isinstance(t, _Tensor) else t for t in inputs]
