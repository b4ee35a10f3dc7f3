"""Who may hold torch's build lock in a candidate's build folder, and clearing the lock a dead
process left.

``load_inline`` takes a lock file (``<build folder>/<extension>/lock``, torch's ``FileBaton``) while
it builds, and also while a worker's import checks that the build is current. A process killed
while holding it (a build at its time limit, a batch interrupted by the user, a worker ended at its
limit) leaves the file behind, and every later ``load_inline`` of that source sleeps until the file
goes: the next build of an honest candidate runs into its whole limit and is recorded as a
``compile_error`` (a build killed at an 8 s limit leaves a lock on which the next build, limited to
120 s, waits all 120 s).

So the judge holds a claim on the folder (``flock`` on ``.kbench-claim``, shared) for as long as a
process of its may take that lock: a build, or a worker of a compiled candidate. Before starting
one, it tries the claim exclusively: if that succeeds no process of any judge is using the folder,
and a lock file there can only be a dead process's, so it is removed. An ``flock`` is released by
the kernel when its holder dies, so a killed judge never leaves a claim behind.

A build that finds another judge's process in the folder (two samples of one source, judged at
once on two GPUs or two Ray nodes) waits (:meth:`BuildClaim.wait_alone`) until that build has a
result, which it then takes, or until the folder is its own: a build alone may be ended for
sitting idle, while one beside another may be waiting on the other's lock and may not. Before, it
built beside the other without the idle limit, and a build that hangs idle ran to its whole limit.
"""
from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Callable

CLAIM_FILE = ".kbench-claim"
TORCH_LOCK = "lock"  # torch.utils.cpp_extension's FileBaton in each extension's build folder


class BuildClaim:
    """A shared claim on ``folder``, taken at construction; :meth:`release` (or the judge's death)
    gives it up. ``cleared``: the stale torch lock files removed when it was taken. ``alone``: no
    other judge's process used the folder then, so a build started under this claim can never
    wait on another's lock (a build that sits idle is then hanging on its own)."""

    def __init__(self, folder: Path):
        self._fd: int | None = None
        self._folder = folder
        self.cleared: list[str] = []
        self.alone = False  # no other process of any judge used the folder when the claim was taken
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(folder / CLAIM_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._try_alone()  # else another process of a judge uses the folder: its lock files may be live
            fcntl.flock(self._fd, fcntl.LOCK_SH)  # from exclusive, or waiting out another's brief exclusive hold
        except OSError:  # a file system without flock, a folder not ours: no claim, nothing cleared
            self.release()

    def _try_alone(self) -> bool:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self.alone = True
        self.cleared = _remove_torch_locks(self._folder)
        return True

    def wait_alone(self, settled: Callable[[], bool], timeout_s: float, poll_s: float = 0.2) -> bool:
        """For a claim that is not alone: its share given up meanwhile (two waiters never hold each
        other off), waits until no other process uses the folder, or ``settled()`` (the other's
        build has its result), or ``timeout_s``. True once alone: stale torch locks cleared, the
        claim shared again. False otherwise, the claim shared again and not alone."""
        if self._fd is None or self.alone:
            return self.alone
        deadline = time.monotonic() + timeout_s
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            while not self._try_alone() and not settled() and time.monotonic() < deadline:
                time.sleep(poll_s)
            fcntl.flock(self._fd, fcntl.LOCK_SH)
        except OSError:
            self.release()
        return self.alone

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "BuildClaim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _remove_torch_locks(folder: Path) -> list[str]:
    """The torch lock files in ``folder``'s extension folders (real folders only: a candidate may
    write links into its build folder), removed."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        lock = os.path.join(entry.path, TORCH_LOCK)
        try:
            os.unlink(lock)  # a link named so is removed itself, never what it points to
            removed.append(lock)
        except OSError:  # none there (the usual case), or a folder by that name
            continue
    return removed
