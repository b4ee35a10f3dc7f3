"""Tensor transfer: the candidate's outputs come back through preallocated tensor files or a device
arena (:mod:`kbench_lib.measure.device_arena`), into the job's output folder (:class:`_OutDir`).
"""
from __future__ import annotations

import os
import stat
import threading
import warnings
from pathlib import Path
import torch

from ..measure import device_arena, tensorfile
from .prepared import PreparedProblem
from ..measure.tensors import nbytes, tensors_in
from ..isolation.worker.timed import timing_file
from .verdict import JudgeOptions


PREALLOCATE_MIN = 16 << 20  # outputs smaller than this are cheap to write into fresh pages
HEADER_ROOM = 1 << 20  # a tensor file's header and alignment, beyond its tensors' bytes
PREALLOCATE_THREADS = 4


class _Preallocation:
    """Files allocated on a few threads (page zeroing is the kernel's work and scales with cores),
    largest first; ``stop`` skips what is left and waits. The work must be over before the worker
    times its calls: host work beside the timed calls delays their launches (it showed as a false
    ``memoisation_suspected`` on an honest kernel when one thread was still allocating)."""

    def __init__(self, out: "_OutDir", files: list[tuple[str, int]], threads: int):
        self._out, self.names = out, [name for name, _ in files]
        self._stopped = threading.Event()
        self._todo = sorted(files, key=lambda f: -f[1])
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, name="kbench-preallocate", daemon=True) for _ in range(threads)]
        try:
            for t in self._threads:
                t.start()
        except BaseException:  # no thread may outlive the folder handle it writes through
            self._threads = [t for t in self._threads if t.ident is not None]
            self.stop()
            raise

    def _run(self) -> None:
        while not self._stopped.is_set():
            with self._lock:
                if not self._todo:
                    return
                name, n = self._todo.pop(0)
            tensorfile.preallocate(name, n, dir_fd=self._out.fd)  # relative to the judge's own folder, never through a symlink

    def stop(self) -> None:
        self._stopped.set()
        for t in self._threads:
            t.join()


def _output_files(prep: PreparedProblem, opts: JudgeOptions) -> list[tuple[str, list[torch.Tensor]]]:
    """The worker's result files as an honest worker writes them, each with the reference's tensors
    of the same shapes: each case's outputs and gradients, and each timed run's samples."""
    files = [(f"case_{i}.kbt", tensors_in([c.expected, c.expected_input_grads, c.expected_param_grads]))
             for i, (c, t) in enumerate(zip(prep.cases, prep.timed)) if not t]
    if opts.timing:
        for k, (name, timed, _) in enumerate(prep.timing_groups):
            files.append((timing_file(timed, name if k else None), tensors_in([prep.cases[i].expected for i in timed])))
    return files


ARENA_MIN = 16 << 20  # below this, outputs are cheap to move through files


def _output_arena(prep: PreparedProblem, opts: JudgeOptions):
    """The device arena for the worker's outputs (:mod:`kbench_lib.measure.device_arena`), or None: a CPU
    device, outputs too small to be worth it, ``opts.device_arena`` off, a kept job folder (its files
    must hold the outputs themselves: the arena is gone after the verdict), or an arena that cannot
    be made (then the files carry everything, preallocated as before)."""
    if not opts.device_arena or opts.keep_workdir or not prep.device.startswith("cuda"):
        return None
    files = _output_files(prep, opts)
    if sum(nbytes(ts) for _, ts in files) < ARENA_MIN:
        return None
    return device_arena.create(prep.device, _arena_size(files))


def _arena_bytes(prep: PreparedProblem, opts: JudgeOptions) -> int:
    """What an honest worker places in the arena (see _arena_size)."""
    return _arena_size(_output_files(prep, opts))


def _arena_size(files: list[tuple[str, list[torch.Tensor]]]) -> int:
    """Every output tensor of the result files ``files``, each starting at an aligned offset."""
    return sum(nbytes(t) + device_arena.ALIGN for _, ts in files for t in ts)


def _preallocate_outputs(out: "_OutDir", prep: PreparedProblem, opts: JudgeOptions) -> _Preallocation | None:
    """Allocates the pages of the worker's output files (each case's outputs and gradients, and the
    timed samples) on a thread of the judge while the worker starts, so that the worker's
    page-locked copies fill pages that exist (tensorfile's docstring). Only for a CUDA device."""
    if not prep.device.startswith("cuda"):
        return None
    sizes = [(p, nbytes(ts)) for p, ts in _output_files(prep, opts)]
    files = [(p, n + HEADER_ROOM) for p, n in sizes if n >= PREALLOCATE_MIN]
    if not files:
        return None
    return _Preallocation(out, files, threads=max(1, min(PREALLOCATE_THREADS, (os.cpu_count() or 2) // 2, len(files))))


class _OutDir:
    """The job's ``out`` folder, created and opened by the judge before any candidate code runs.

    The build and run workers import the candidate while the job folder is writable: it can
    replace ``out`` with a symlink (to /dev/shm, $HOME, ...). The judge therefore never resolves
    ``out`` by name after this: it creates (preallocates) and reads result files relative to the
    folder it opened (``dir_fd``, ``O_NOFOLLOW``), and a read finds the job's ``out`` no longer
    that folder a :class:`tensorfile.TensorFileError` (a crash)."""

    def __init__(self, wd: Path):
        self.path = wd / "out"
        try:
            if not stat.S_ISDIR(os.lstat(self.path).st_mode):
                os.unlink(self.path)  # a caller's workdir that an earlier candidate left a symlink in
        except FileNotFoundError:
            pass
        try:
            self.path.mkdir()
        except FileExistsError:
            pass  # a real folder: a caller's workdir used before
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        st = os.fstat(self.fd)
        self._ident = (st.st_dev, st.st_ino)
        self._files: dict[str, int] | None = None  # after detach(): the result files, open
        self._replaced = False
        self.arena = None  # the judgement's device arena, where the worker's files may place tensors

    def detach(self) -> None:
        """Opens every result file (``*.kbt``) now and reads only those from here on, so that the
        job folder can be removed before the next candidate's worker starts (it must find nothing
        of this one's: in a batch both are judged on the same input sets). A folder already
        replaced stays so: every read fails as :meth:`read` would."""
        if self.fd < 0 or self._files is not None:
            return
        self._files = {}
        if not self.intact():
            self._replaced = True
            return
        try:
            names = sorted(n for n in os.listdir(self.fd) if n.endswith(".kbt"))[:MAX_RESULT_FILES]
        except OSError:
            names = []
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
            except OSError:
                continue  # a symlink or something unreadable: read() finds it missing
            if stat.S_ISREG(os.fstat(fd).st_mode):
                self._files[name] = fd
            else:
                os.close(fd)

    def intact(self) -> bool:
        """Whether ``out`` is still the folder the judge opened (not a symlink, not another folder)."""
        if self._files is not None:
            return not self._replaced
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == self._ident

    def read(self, name: str, device: str | None = None, max_bytes: int | None = None):
        """A worker's tensor file; with a CUDA ``device``, its tensors copied straight there.
        ``max_bytes``: what an honest file of this name could hold (a larger one is refused
        before anything is copied to the judge's GPU)."""
        if self.fd < 0:
            raise tensorfile.TensorFileError("the job's out folder is closed")
        if not self.intact():
            raise tensorfile.TensorFileError("the job's out folder was replaced during the run (a symlink or another folder)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # read-only mapping: the views are never written
            if self._files is not None:
                if name not in self._files:
                    raise tensorfile.TensorFileError(f"cannot open {name}: No such file or directory")
                return tensorfile.read(name, device=device, max_bytes=max_bytes, fd=self._files[name], arena=self.arena)
            return tensorfile.read(name, device=device, dir_fd=self.fd, max_bytes=max_bytes, arena=self.arena)

    def close(self, names=()) -> None:
        """Closes the folder; where it no longer sits at ``out`` (moved away by the candidate, so
        removing the job folder would miss it), first removes the files the judge made there."""
        if self.fd < 0:
            return
        for fd in (self._files or {}).values():
            os.close(fd)
        self._files = {} if self._files is not None else None
        try:
            if names and self._files is None and not self.intact():
                for name in names:
                    try:
                        os.unlink(name, dir_fd=self.fd)
                    except OSError:
                        pass
        finally:
            os.close(self.fd)
            self.fd = -1
            self.arena = None


MAX_RESULT_FILES = 1024  # more result files than any plan writes: the rest are never opened
RESULT_SLACK = 64 << 20  # bytes beyond twice the expected tensors: fingerprints, a wrong shape or two


def _result_cap(*expected) -> int:
    """The most tensor bytes a result file may hold: twice what the reference produced, and some.
    More is no honest answer (a wrong shape that large fails on its shape anyway); refused as a
    forged file, it never reaches the judge's GPU."""
    return 2 * nbytes(list(expected)) + RESULT_SLACK
