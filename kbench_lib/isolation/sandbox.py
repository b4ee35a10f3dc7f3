"""Running untrusted candidate code in its own process (threat #15, #19 and the faults list).

WARNING: a candidate is arbitrary code written by a model. It runs here, in a fresh process that
gets: a scrubbed environment built from an allow-list (no API keys, tokens, credentials or cloud
settings), a private temporary directory as its cwd, HOME and TMPDIR, resource limits (no core
files, bounded file sizes and open files), its own session (so a timeout kills it and every child
it started), a wall-clock limit, and, where the OS allows, its own network, PID and mount
namespaces (``unshare --net --pid --fork --mount-proc``: no interface but a down loopback, and a
fresh ``/proc`` in which the judge's process, its environment and its memory do not exist). Its stdout and stderr go through a pipe into
a bounded log (the first and last 32 KiB are kept), so 100 MB of printing costs nothing but time.
This is isolation against accidents and opportunistic cheats, not a security boundary against a
kernel exploit: run untrusted batches inside a VM or container as well.
"""
from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import contextlib
import threading
import time
import weakref
from dataclasses import dataclass

from .idle import IdleWatch
from ..core import thread_stop
from ..core.paths import with_package_importable
from .process_setup import _limit_resources, scrubbed_env

LOG_KEEP = 32 * 1024
IDLE_POLL_S = 0.5  # how often a wait with an idle limit looks at the child's CPU time


PREFIXES = (
    # own network, PID and mount namespaces with a fresh /proc: no network, and no view of the judge's
    # process (its environment, its memory) or of any other process; --kill-child: the namespace's
    # first process dies with unshare, which dies with the judge (die_with_parent)
    ("--net", "--pid", "--fork", "--kill-child", "--mount-proc"),
    ("--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"),
    ("--net", "--pid", "--fork", "--mount-proc"),
    ("--user", "--map-root-user", "--net", "--pid", "--fork", "--mount-proc"),
    ("--net",),
    ("--user", "--map-root-user", "--net"),
)


# The namespace's init: a shell (PID 1), so the worker is an ordinary process that dies of its faults
# like any other. Where a mount namespace exists it makes every mount read-only except the
# directories named in KBENCH_RW (the job's own directory, the build cache) and /dev, /proc, /sys,
# so untrusted code cannot write outside its sandbox (threat #19). If any step fails, the worker
# still runs, with KBENCH_FS_READONLY=0.
INIT_SCRIPT = r"""
ok=0
if [ -n "$KBENCH_RW" ] && mount --make-rprivate / 2>/dev/null; then
  ok=1
  old_ifs=$IFS; IFS=:
  for d in $KBENCH_RW; do mount --bind "$d" "$d" 2>/dev/null || ok=0; done
  IFS=$old_ifs
  if [ $ok = 1 ]; then
    for mp in $(awk '{print $2}' /proc/self/mounts | sort -u); do
      case "$mp" in /proc|/proc/*|/dev|/dev/*|/sys|/sys/*) continue;; esac
      skip=0; old_ifs=$IFS; IFS=:
      for d in $KBENCH_RW; do [ "$mp" = "$d" ] && skip=1; done
      IFS=$old_ifs
      [ $skip = 1 ] && continue
      mount -o remount,bind,ro "$mp" 2>/dev/null || ok=0
    done
  fi
  # /dev/shm: a fresh tmpfs of its own, the job's folder under it bound back in (namespaces._private_shm)
  # through a descriptor of this shell's own, held across the mount that hides the folder. Its number
  # is one the worker was not passed: a fixed 9 once replaced, then closed, whatever the judge had
  # passed there (a build's message pipe: the worker died at start with EBADF, judged a crash)
  shm_dir=""; shm_fd=""
  old_ifs=$IFS; IFS=:
  for d in $KBENCH_RW; do case "$d" in /dev/shm/*) shm_dir="$d";; esac; done
  IFS=$old_ifs
  if [ -n "$shm_dir" ]; then
    for n in 3 4 5 6 7 8 9; do [ -e "/proc/$$/fd/$n" ] || { shm_fd=$n; break; }; done
    [ -n "$shm_fd" ] || ok=0
  fi
  # `command`: a failed redirection of exec must not end the shell (it would, exec being special)
  if [ $ok = 1 ] && [ -d /dev/shm ] && { [ -z "$shm_dir" ] || command eval "exec $shm_fd<\"\$shm_dir\""; } 2>/dev/null; then
    if mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm 2>/dev/null; then
      if [ -n "$shm_dir" ] && ! { mkdir -p "$shm_dir" && mount --no-canonicalize --bind "/proc/$$/fd/$shm_fd" "$shm_dir" && [ -d "$shm_dir/tmp" ]; } 2>/dev/null; then
        umount -l /dev/shm 2>/dev/null; ok=0
      fi
    else
      ok=0
    fi
    [ -z "$shm_fd" ] || eval "exec $shm_fd<&-"
  fi
fi
export KBENCH_FS_READONLY=$ok
"$@"
exit $?
"""


def wrap(prefix: tuple[str, ...], argv: list[str]) -> list[str]:
    if "--pid" in prefix:
        return [*prefix, "/bin/sh", "-c", INIT_SCRIPT, "kbench-init", *argv]
    return [*prefix, *argv]


@functools.lru_cache(maxsize=4)
def isolation_prefix(cuda: bool = False) -> tuple[str, ...]:
    """The strongest ``unshare`` prefix that works here, or () if none. With ``cuda``, the probe
    also creates a CUDA context inside it, so an isolation the driver cannot live with is never
    chosen."""
    exe = shutil.which("unshare")
    if not exe:
        return ()
    probe = [sys.executable, "-c", "import torch; torch.zeros(1, device='cuda'); print('ok')"] if cuda else ["true"]
    import tempfile

    rw = tempfile.mkdtemp(prefix="kbench-probe-")
    try:
        for flags in PREFIXES:
            try:
                r = subprocess.run(wrap((exe, *flags), probe), capture_output=True, timeout=120, env={**os.environ, "KBENCH_RW": rw})
            except (OSError, subprocess.TimeoutExpired):
                continue
            if r.returncode == 0 and (not cuda or b"ok" in r.stdout):
                return (exe, *flags)
        return ()
    finally:
        shutil.rmtree(rw, ignore_errors=True)


def netns_prefix() -> tuple[str, ...]:
    return isolation_prefix(False)


class BoundedLog:
    """Keeps the first and last LOG_KEEP bytes of a stream, counting what it drops."""

    def __init__(self, keep: int = LOG_KEEP):
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if len(self.head) < self.keep:
            take = self.keep - len(self.head)
            self.head += data[:take]
            data = data[take:]
        if data:
            self.tail += data
            if len(self.tail) > self.keep:
                del self.tail[: len(self.tail) - self.keep]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {dropped} bytes of output dropped ...]\n" if dropped > 0 else ""
        return (bytes(self.head) + middle.encode() + bytes(self.tail)).decode("utf-8", "replace")


@dataclass
class ProcessResult:
    returncode: int | None
    timed_out: bool
    wall_s: float
    log: str
    messages: list
    network_isolated: bool
    pid_isolated: bool = False
    idle_s: float | None = None  # set when it was ended for sitting idle that long (a timeout too)

    @property
    def signal_name(self) -> str | None:
        code = self.returncode
        if code is not None and self.pid_isolated and code > 128:
            code = 128 - code  # the namespace's shell reports a child killed by signal N as 128 + N
        if code is not None and code < 0:
            try:
                return signal.Signals(-code).name
            except ValueError:
                return f"signal {-code}"
        return None


def _pump(stream, sink: BoundedLog) -> None:
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        sink.feed(chunk)


def _read_messages(fd: int, out: list) -> None:
    """Reads newline-delimited JSON messages from the worker's message pipe."""
    import json

    buf = b""
    with os.fdopen(fd, "rb") as f:
        for line in f:
            buf = line
            try:
                msg = json.loads(buf)
                if isinstance(msg, dict):
                    msg["_t"] = time.monotonic()  # arrival time: where the judge's time goes
                out.append(msg)
            except ValueError:
                out.append({"event": "garbled", "raw": buf[:200].decode("utf-8", "replace")})
            if len(out) > 10000:
                break


def run_isolated(args: list[str], **kw) -> ProcessResult:
    """Run ``python -m <args...>`` in ``workdir`` under the limits above and wait for it; the
    keywords are :func:`start_isolated`'s (``workdir``, ``timeout_s``, ``env_extra``,
    ``isolate_network``, ``max_file_bytes``, ``cuda``, ``writable``).

    The child gets a message pipe on a file descriptor named by ``KBENCH_MSG_FD``. The judge's
    worker's runs (``-m kbench_lib.isolation.worker run``) are forked from a warm server (:mod:`kbench_lib.isolation.forkserver`)
    unless ``KBENCH_FORKSERVER=0``; anything else is a fresh interpreter."""
    return start_isolated(args, **kw).result()


def start_isolated(
    args: list[str],
    *,
    workdir: str,
    timeout_s: float,
    env_extra: dict[str, str] | None = None,
    isolate_network: bool = True,
    max_file_bytes: int = 16 << 30,
    cuda: bool = False,
    writable: tuple[str, ...] = (),
    gated: bool = False,
    idle_timeout_s: float | None = None,
    fds: dict[str, int] | None = None,
) -> "Running":
    """:func:`run_isolated`, started and not waited for: the caller goes on while it runs and
    collects its :class:`ProcessResult` with :meth:`Running.result`.

    ``gated``: the child also gets the read end of a pipe, named by ``KBENCH_GATE_FD``, that stays
    closed until :meth:`Running.open_gate` (or :meth:`Running.result`); the worker waits on it
    before it profiles or times anything, so that a batch can run it beside the judge's own work
    on the previous candidate and still give it the GPU alone for the measured part.

    ``idle_timeout_s``: also end it (a timeout) once its session has used no CPU time for that
    long after its gate opened (:mod:`kbench_lib.isolation.idle`); None: the time limit alone.

    ``fds``: more descriptors the child inherits, each named to it by an environment variable
    (a device arena's: :mod:`kbench_lib.measure.device_arena`); the caller keeps and closes its own."""
    os.makedirs(workdir, exist_ok=True)
    tmp = os.path.join(workdir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    read_fd, write_fd = os.pipe()
    gate_r, gate_w = os.pipe() if gated else (-1, -1)
    # descriptors the child gets by name: its gate's read end, and copies of the caller's own
    named = {"KBENCH_GATE_FD": gate_r} if gated else {}
    named.update({name: os.dup(fd) for name, fd in (fds or {}).items()})
    env = scrubbed_env({"HOME": tmp, "TMPDIR": tmp, "KBENCH_MSG_FD": str(write_fd), **(env_extra or {})})
    env.update({name: str(fd) for name, fd in named.items()})
    with_package_importable(env)  # the worker imports this package
    rw = [os.path.realpath(workdir)]
    for d in writable:
        os.makedirs(d, exist_ok=True)
        rw.append(os.path.realpath(d))
    env["KBENCH_RW"] = ":".join(dict.fromkeys(rw))
    server = None
    if args[:3] == ["-m", "kbench_lib.isolation.worker", "run"]:
        from .server_pool import server as warm_server

        server = warm_server(cuda)
    if server is not None:  # it closes every descriptor given to it, whatever happens
        return _start_forked(server, args[2:], workdir, timeout_s, env, isolate_network, rw, max_file_bytes, read_fd, write_fd,
                             gate_w, idle_timeout_s, named)
    try:
        prefix = isolation_prefix(cuda) if isolate_network else ()
        cmd = wrap(prefix, [sys.executable, *args])
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(write_fd, *named.values()),
            start_new_session=True,
            preexec_fn=functools.partial(_limit_resources, max_file_bytes),
        )
    except BaseException:
        for fd in (read_fd, write_fd, gate_w, *named.values()):
            if fd >= 0:
                os.close(fd)
        raise
    for fd in (write_fd, *named.values()):
        os.close(fd)
    run = Running(started, timeout_s, gate_w, network_isolated=bool(prefix), pid_isolated="--pid" in prefix,
                  idle_timeout_s=idle_timeout_s)
    run._start_readers(proc.stdout, read_fd)
    run._popen = proc
    return _own(run)


# Children by their owner (a batch): an interrupted batch ends every child its threads started
# (its builds and its workers) at once, rather than waiting for each to end by itself or at its limit
_OWNER = threading.local()
_OWNED: "weakref.WeakKeyDictionary[Running, object]" = weakref.WeakKeyDictionary()
_STOPPED: "weakref.WeakSet" = weakref.WeakSet()
_OWNED_LOCK = threading.Lock()


@contextlib.contextmanager
def owned_by(owner):
    """The children this thread starts inside the block belong to ``owner`` (:func:`stop_owned`)."""
    before = getattr(_OWNER, "owner", None)
    _OWNER.owner = owner
    try:
        yield
    finally:
        _OWNER.owner = before


def stop_owned(owner) -> int:
    """Ends every child of ``owner`` still running, with its whole session, and any it starts from
    now on as it starts; returns how many were running."""
    with _OWNED_LOCK:
        _STOPPED.add(owner)
        children = [run for run, o in _OWNED.items() if o is owner and run.ended is None]
    for run in children:
        run.stop()
    return len(children)


def _own(run: "Running") -> "Running":
    owner = getattr(_OWNER, "owner", None)
    if owner is None:
        return run
    with _OWNED_LOCK:
        _OWNED[run] = owner
        stopped = owner in _STOPPED
    if stopped:
        run.stop()
    return run


class Running:
    """A child started by :func:`start_isolated`: open its gate, wait for its end, collect its result."""

    def __init__(self, started: float, timeout_s: float, gate_w: int, network_isolated: bool, pid_isolated: bool,
                 idle_timeout_s: float | None = None):
        self.started, self.timeout_s, self.idle_timeout_s = started, timeout_s, idle_timeout_s
        self.idle_s: float | None = None  # how long it had been idle when it was ended for that
        self._gate_w = gate_w
        self.gate_opened: float | None = None if gate_w >= 0 else started
        self.network_isolated, self.pid_isolated = network_isolated, pid_isolated
        self.log = BoundedLog()
        self.messages: list = []
        self._threads: list[threading.Thread] = []
        self._popen: subprocess.Popen | None = None
        self._server = self._rid = self._pid = None
        self.returncode: int | None = None
        self.timed_out = False
        self.ended: float | None = None
        self._result: ProcessResult | None = None

    def _start_readers(self, log_stream, msg_fd: int) -> None:
        self._threads = [threading.Thread(target=_pump, args=(log_stream, self.log), daemon=True),
                         threading.Thread(target=_read_messages, args=(msg_fd, self.messages), daemon=True)]
        for t in self._threads:
            t.start()

    def open_gate(self) -> None:
        """Lets the child go on past its gate (at once if it is not there yet); idempotent."""
        if self._gate_w < 0:
            return
        try:
            os.write(self._gate_w, b"g")
        except OSError:
            pass  # the child is gone, or closed its end: nothing waits
        finally:
            os.close(self._gate_w)
            self._gate_w = -1
            self.gate_opened = time.monotonic()

    def _deadline(self) -> float:
        """The wall-clock limit counts from the start, not counting the time the gate was held shut."""
        held = (self.gate_opened or time.monotonic()) - self.started
        return self.started + self.timeout_s + held

    def wait(self) -> None:
        """Blocks until the child has ended (killed, with its whole session, once over its limit,
        or once idle for ``idle_timeout_s``: :mod:`kbench_lib.isolation.idle`). Opens the gate first if it is
        still shut: nothing else would; so no time idle behind the gate is ever counted."""
        if self.ended is not None:
            return
        self.open_gate()
        ended = False
        try:
            ended = self._wait_within_limits()
            self.timed_out = not ended
        finally:  # interrupted too: never left running
            try:  # kill the whole session: the worker and anything it started (compilers, threads' children)
                os.killpg(self._session(), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self._popen is not None:
            self._popen.wait()
            self.returncode = self._popen.returncode
        elif not ended:
            with self._server.lock:
                self.returncode = self._server.wait(self._rid, 60)
        self.ended = time.monotonic()

    def _session(self) -> int:
        return self._popen.pid if self._popen is not None else self._pid

    def stop(self) -> None:
        """Ends the child now, with its whole session (a wait on it returns at once); its result
        is what a killed child's is."""
        if self.ended is None:
            try:
                os.killpg(self._session(), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, TypeError):
                pass

    def _wait_within_limits(self) -> bool:
        """True when the child ended by itself; False once over its time limit or idle limit."""
        watch = IdleWatch(self._session(), time.monotonic()) if self.idle_timeout_s else None
        while True:
            left = max(0.0, self._deadline() - time.monotonic())
            if self._wait_step(min(left, IDLE_POLL_S) if watch is not None else left):
                return True
            if time.monotonic() >= self._deadline():
                return False
            if watch is not None:
                idle = watch.idle_s(time.monotonic())
                if idle >= self.idle_timeout_s:
                    self.idle_s = idle
                    return False

    def _wait_step(self, timeout: float) -> bool:
        """Waits up to ``timeout`` for the child's end; True when it ended."""
        if self._popen is not None:
            try:
                self._popen.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        with self._server.lock:  # other threads' workers' ends are kept by the server for their own waits
            code = self._server.wait(self._rid, timeout)
        if code is None:
            return False
        self.returncode = code
        return True

    def result(self) -> ProcessResult:
        """Waits for the end (:meth:`wait`) and for the child's last output and messages."""
        if self._result is None:
            self.wait()
            for t in self._threads:
                t.join(timeout=5)
            self._result = ProcessResult(returncode=self.returncode, timed_out=self.timed_out, wall_s=self.ended - self.started,
                                         log=self.log.text(), messages=self.messages, network_isolated=self.network_isolated,
                                         pid_isolated=self.pid_isolated, idle_s=self.idle_s)
        return self._result


def close_servers() -> None:
    """Stops the warm fork servers of every thread (:mod:`kbench_lib.isolation.server_pool`)."""
    from .server_pool import close_all

    close_all()


def _start_forked(server, args, workdir, timeout_s, env, isolate, rw, max_file_bytes, read_fd, write_fd, gate_w,
                  idle_timeout_s, named: dict[str, int]) -> Running:
    """start_isolated through the fork server: same limits, same result. ``named``: the child's
    descriptors by environment name (its gate's, a device arena's), closed here as the pipes are."""
    from .process_setup import CLONE_NEWNET, CLONE_NEWPID

    log_r, log_w = os.pipe()
    started = time.monotonic()
    fds, names = [log_w, write_fd, *named.values()], list(named)
    child_env = {k: v for k, v in env.items() if k not in ("KBENCH_MSG_FD", *names)}
    try:
        # never cut between its request and its reply (the server's stream, shared, would be out of
        # step): an interrupted batch's stop lands after it (core.thread_stop)
        with server.lock, thread_stop.shielded():
            rid, pid = server.spawn(list(args), workdir, child_env, rw, isolate, max_file_bytes, fds, names)
    except BaseException:
        for fd in (log_r, read_fd, gate_w):
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in fds:
            os.close(fd)
    isolation = server.isolation if isolate else 0
    run = Running(started, timeout_s, gate_w, network_isolated=bool(isolation & CLONE_NEWNET), pid_isolated=bool(isolation & CLONE_NEWPID),
                  idle_timeout_s=idle_timeout_s)
    run._server, run._rid, run._pid = server, rid, pid
    run._start_readers(os.fdopen(log_r, "rb"), read_fd)
    return _own(run)
