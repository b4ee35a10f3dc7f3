"""The fork server's children's namespaces: the system calls that ``unshare`` and ``mount`` make,
for a child of :mod:`kbench_lib.isolation.forkserver` (see :mod:`kbench_lib.isolation.sandbox` for what each
namespace isolates). A mount namespace leaves every mount read-only except the job's folders and
gives /dev/shm a fresh tmpfs; a PID namespace forks a PID 1 that mounts a fresh /proc and exits
with its child's status.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

from .process_setup import CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
_OPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
              "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    libc.unshare.argtypes = [ctypes.c_int]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def _write_file(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _unshare(libc, flags: int) -> None:
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    if flags & CLONE_NEWUSER:
        _write_file("/proc/self/setgroups", "deny")
        _write_file("/proc/self/uid_map", f"0 {uid} 1")
        _write_file("/proc/self/gid_map", f"0 {gid} 1")


def _mount_points() -> list[tuple[str, set]]:
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            out.append((point, set(fields[5].split(","))))
    return out


def _readonly_except(libc, rw: list[str]) -> bool:
    """Every mount read-only except ``rw`` (bound onto themselves) and /dev, /proc, /sys; and
    /dev/shm a fresh tmpfs of its own (:func:`_private_shm`)."""
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    ok = True
    for d in rw:
        ok &= libc.mount(d.encode(), d.encode(), None, MS_BIND | MS_REC, None) == 0
    if not ok:
        return False
    for point, opts in sorted(dict(_mount_points()).items()):
        if point in rw or point in ("/proc", "/dev", "/sys") or point.startswith(("/proc/", "/dev/", "/sys/")):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for name, bit in _OPT_FLAGS.items():
            if name in opts:
                flags |= bit
        ok &= libc.mount(None, point.encode(), None, flags, None) == 0
    return ok and _private_shm(libc, rw)


SHM = "/dev/shm"
MNT_DETACH = 2


def _private_shm(libc, rw: list[str]) -> bool:
    """A fresh, empty tmpfs on /dev/shm, with the folders of ``rw`` that lie under it (the job's
    own) bound back in at their paths: a candidate finds nothing another left there (in a batch
    every candidate of a problem sees the same input sets, so answers dropped in a shared /dev/shm
    would be a lookup table for the next one), and what it leaves there goes with its namespace.
    True when done, or when nothing needs hiding; False leaves /dev/shm as it was."""
    inside = [d for d in rw if d.startswith(SHM + "/")]
    if not os.path.isdir(SHM) or SHM in rw:
        return True
    fds: list[tuple[str, int]] = []
    mounted = False
    try:
        for d in inside:
            fds.append((d, os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
        if libc.mount(b"tmpfs", SHM.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777") != 0:
            return False
        mounted = True
        for d, fd in fds:
            os.makedirs(d, exist_ok=True)
            if libc.mount(f"/proc/self/fd/{fd}".encode(), d.encode(), None, MS_BIND | MS_REC, None) != 0:
                raise OSError("bind")
            st, want = os.stat(d), os.fstat(fd)
            if (st.st_dev, st.st_ino) != (want.st_dev, want.st_ino):
                raise OSError("bound another folder")
        return True
    except OSError:
        if mounted:
            libc.umount2(SHM.encode(), MNT_DETACH)  # never leave the job's own folder hidden
        return False
    finally:
        for _, fd in fds:
            os.close(fd)


def _status_code(status: int) -> int:
    """A waitpid status as a shell reports it: the exit code, or 128 + N for signal N."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def _wait_and_exit(pid: int) -> None:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    os._exit(_status_code(status))


def _enter_namespaces(libc, flags: int, rw: list[str]) -> bool:
    """Unshares ``flags``; with a mount namespace makes every mount read-only except ``rw``; with a
    PID namespace forks, the parent waiting and exiting with the child's status, and returns in
    the child (PID 1 of the namespace) with a fresh /proc mounted. True when the file system is
    read-only outside ``rw``."""
    _unshare(libc, flags)
    readonly = _readonly_except(libc, rw) if flags & CLONE_NEWNS else False
    if flags & CLONE_NEWPID:
        pid = os.fork()
        if pid:
            _wait_and_exit(pid)
        _die_with_parent()  # PID 1 of the namespace: when it dies, the kernel kills every process in it
        if libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
            os._exit(70)
    return readonly


def _die_with_parent(expected_parent: int | None = None) -> None:
    from .process_setup import die_with_parent

    die_with_parent(expected_parent)
