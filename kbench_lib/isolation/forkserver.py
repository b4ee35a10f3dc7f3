"""A warm start for candidate processes: a server with torch and the worker imported (CUDA never
initialised) that forks a fresh, isolated child per candidate.

Starting ``python -m kbench_lib.isolation.worker`` costs an interpreter and a torch import per candidate
(1-3 s); a fork of this server costs milliseconds. Each child is as fresh as a new process for
everything that matters: its own address space (copy-on-write: nothing it changes reaches the
server or the next child), its own CUDA context (created after the fork; the server never touches
CUDA), its own session, environment, working directory, resource limits and, where the kernel
allows, its own mount, network and PID namespaces, set up with the system calls that ``unshare``
and ``mount`` make (:mod:`kbench_lib.isolation.namespaces`; see :mod:`kbench_lib.isolation.sandbox` for what
each one isolates).

WARNING: the children run untrusted candidate code. The server itself runs only kbench code and
holds nothing secret: it is started with the sandbox's scrubbed environment, never sees a problem's
data, and never runs candidate code. A request names what to run and passes the child's output
and message pipes as file descriptors over a Unix socket.

Process tree with a PID namespace: server -> C1 (new session, unshares) -> C2 (PID 1 of the new
namespace: mounts a fresh /proc, waits) -> C3 (the worker). C1 and C2 exit with C3's status (128 + N
for a signal, as a shell would), so killing C1's process group, or C2, ends every process of the
candidate. Without a PID namespace C1 is the worker.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from .namespaces import _die_with_parent, _enter_namespaces, _libc, _wait_and_exit
from .process_setup import CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER, WARM_IMPORTS

# strongest first, as sandbox.PREFIXES
ISOLATIONS = (
    CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID,
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID,
    CLONE_NEWNET,
    CLONE_NEWUSER | CLONE_NEWNET,
)
MAX_MSG = 1 << 20
MAX_FDS = 8  # a request's descriptors: log, messages, then named ones (gate, device arena)
# memoised functions (functools caches) that a worker's first Triton launch calls, called by the
# server once, before any fork, so that every child inherits their values: each only reads files or
# runs a tool, none initialises CUDA or leaves a thread. triton_key hashes Triton's sources and its
# 400 MB libtriton.so (0.27-0.38 s on a 2-core machine with the files in the page cache, about 3 s
# without), on every fresh worker's first Triton launch; libcuda_dirs runs `ldconfig -p`.
# Not Inductor's torch_key: importing torch._inductor.codecache fixes folders under the importing
# process's temporary folder in module constants (its precompiled headers' among them), the server's
# /tmp, read-only in a worker, where torch.compile on the CPU would then fail.
WARM_KEYS = (("triton.runtime.cache", "triton_key"), ("triton.backends.nvidia.driver", "libcuda_dirs"))


# ----------------------------------------------------------------------------------------------
# the server's side


def _child(req: dict, fds: list[int], sock: socket.socket, isolation: int, server: int) -> None:
    """C1: runs in the forked child, never returns."""
    try:
        sock.close()
        _die_with_parent(server)  # the server dies with the judge, every worker with the server
        os.setsid()
        from .process_setup import _limit_resources

        _limit_resources(int(req.get("max_file_bytes", 16 << 30)))
        libc = _libc()
        fs_readonly = False
        flags = isolation if req.get("isolate") else 0
        if flags:
            fs_readonly = _enter_namespaces(libc, flags, [os.path.realpath(d) for d in req.get("rw", [])])
            if flags & CLONE_NEWPID:  # this process is PID 1 of the namespace: it waits, the worker is its child
                pid = os.fork()
                if pid:
                    signal.signal(signal.SIGTERM, lambda *a: os._exit(143))
                    _wait_and_exit(pid)
                _die_with_parent()
        _exec_worker(req, fds, fs_readonly)
    except BaseException as e:  # noqa: BLE001 - the child must never return into the server's loop
        try:
            os.write(fds[0], f"kbench forkserver: could not start the worker: {type(e).__name__}: {e}\n".encode())
        finally:
            os._exit(71)


def _exec_worker(req: dict, fds: list[int], fs_readonly: bool) -> None:
    """C3 (or C1): becomes the worker in this process, as ``python -m kbench_lib.isolation.worker ARGS`` would."""
    log_fd, msg_fd = fds[0], fds[1]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(devnull)
    os.close(log_fd)
    os.chdir(req["workdir"])
    env = dict(req["env"])
    env["KBENCH_MSG_FD"] = str(msg_fd)
    # the gate (sandbox.start_isolated(gated=True)) and named descriptors (a device arena's), by name
    for name, fd in zip(req.get("fd_names") or [], fds[2:]):
        env[str(name)] = str(fd)
    env["KBENCH_FS_READONLY"] = "1" if fs_readonly else "0"
    os.environ.clear()
    os.environ.update(env)
    import tempfile

    tempfile.tempdir = None  # TMPDIR is the job's own
    sys.argv = ["kbench_lib.isolation.worker", *req["args"]]
    from .worker import __main__ as worker  # the worker's entry module (imported, not run: its main is called here)

    worker.main(list(req["args"]))  # exits the process
    os._exit(1)


def warm_keys() -> list[str]:
    """Calls :data:`WARM_KEYS` in this process (the server, before any fork); the names of those
    now memoised. One that is missing or fails (no Triton, no libcuda on a CPU machine) is left
    for the worker that needs it, which then pays for it as before. ``KBENCH_WARM_KEYS=0`` in the
    server's environment calls none (to measure what they save)."""
    import importlib

    done: list[str] = []
    if os.environ.get("KBENCH_WARM_KEYS") == "0":
        return done
    for module, name in WARM_KEYS:
        try:
            getattr(importlib.import_module(module), name)()
            done.append(f"{module}.{name}")
        except Exception:  # noqa: BLE001 - an optional part missing or failing here costs only time later
            pass
    return done


def _probe(isolation: int, cuda: bool) -> bool:
    """Whether a child isolated with ``isolation`` starts (and, with ``cuda``, creates a CUDA context)."""
    pid = os.fork()
    if pid == 0:
        try:
            if not _enter_namespaces(_libc(), isolation, ["/dev/shm"] if os.path.isdir("/dev/shm") else []) and isolation & CLONE_NEWNS:
                os._exit(3)
            if cuda:
                import torch

                torch.zeros(1, device="cuda")
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(5)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _warm_up(cuda: bool) -> tuple[int, dict] | None:
    """What every server does before its first fork: torch, the worker and :data:`WARM_IMPORTS`
    imported, :data:`WARM_KEYS` called, the strongest isolation a child can start with probed.
    (isolation, seconds per phase), or None where a forked child cannot even use CUDA."""
    import importlib

    # torch.cuda.is_available() (which imports below may call) must not initialise the driver here:
    # a child forked after that cannot use CUDA
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    marks = [("begin", time.monotonic())]  # where its start goes (the judge's own speed; sent with its hello)
    import torch  # noqa: F401 - imported once here, inherited by every child

    marks.append(("torch", time.monotonic()))
    from .worker import __main__ as worker  # noqa: F401 - the worker's entry, with every stage it imports

    marks.append(("worker", time.monotonic()))
    for name in WARM_IMPORTS:  # what the profiler, torch.compile and load_inline import on first use
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional part missing only costs its import later
            pass
    marks.append(("warm_imports", time.monotonic()))
    warm_keys()
    marks.append(("warm_keys", time.monotonic()))

    isolation = next((f for f in ISOLATIONS if _probe(f, cuda)), 0)
    if isolation == 0 and not _probe(0, cuda):  # a forked child cannot even use CUDA: no server
        return None
    marks.append(("probes", time.monotonic()))
    return isolation, {name: round(t - marks[i][1], 4) for i, (name, t) in enumerate(marks[1:])}


def _torch_threads() -> int:
    """The size of torch's thread pool, as every worker forked now inherits it."""
    import torch

    return torch.get_num_threads()


def _hello(isolation: int, phases: dict, **extra) -> dict:
    return {"event": "hello", "ok": True, "isolation": isolation, "pid_isolated": bool(isolation & CLONE_NEWPID),
            "start_s": phases, **extra}


def serve(sock: socket.socket, cuda: bool) -> None:
    """A server started on its own: warmed up, then :func:`_serve_workers`."""
    warm = _warm_up(cuda)
    if warm is None:
        _send(sock, {"event": "hello", "ok": False})
        return
    _send(sock, _hello(*warm, threads=_torch_threads()))
    _serve_workers(sock, warm[0])


def _reap(children: dict, on_exit=None) -> None:
    """Collects the children that have ended (``on_exit(request id, return code)`` for each)."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        rid = children.pop(pid, None)
        if rid is not None and on_exit is not None:
            on_exit(rid, -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


def _serve_workers(sock: socket.socket, isolation: int) -> None:
    """The server's loop: requests in, one forked child each, its exit status back."""
    children: dict[int, str] = {}
    while True:
        ready, _, _ = select.select([sock], [], [], 0.02 if children else None)
        _reap(children, lambda rid, code: _send(sock, {"event": "exit", "id": rid, "returncode": code}))
        if not ready:
            continue
        msg, fds, _, _ = socket.recv_fds(sock, MAX_MSG, MAX_FDS)
        if not msg:
            return
        req = json.loads(msg)
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(req, fds, sock, isolation, server)
        for fd in fds:
            os.close(fd)
        children[pid] = req["id"]
        _send(sock, {"event": "started", "id": req["id"], "pid": pid})


def zygote(sock: socket.socket, cuda: bool) -> None:
    """A warmed-up parent of servers: each request (a socket's end, and the cores to keep to) is
    answered by a fork that becomes a server of its own on that socket (:func:`_forked_server`).
    A batch over several GPUs thus pays for one warm-up, not one per GPU: servers started as
    interpreters at once slow each other down (two: up to 12 s each, against 8-9 s for one alone).
    It never forks a worker itself and never touches CUDA."""
    warm = _warm_up(cuda)
    if warm is None:
        _send(sock, {"event": "hello", "ok": False})
        return
    isolation, phases = warm
    _send(sock, _hello(isolation, phases, zygote=True))
    children: dict[int, str] = {}
    while True:
        ready, _, _ = select.select([sock], [], [], 0.05 if children else None)
        _reap(children)
        if not ready:
            continue
        msg, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 1)
        if not msg:
            return
        req = json.loads(msg)
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            _send(sock, {"event": "forked", "id": req.get("id"), "pid": None})
            continue
        zygote_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            _forked_server(sock, fds[0], req, isolation, zygote_pid)
        os.close(fds[0])
        children[pid] = str(req.get("id"))
        _send(sock, {"event": "forked", "id": req.get("id"), "pid": pid})


def _forked_server(zygote_sock: socket.socket, fd: int, req: dict, isolation: int, zygote_pid: int) -> None:
    """A child of the zygote that becomes a server on ``fd``; never returns."""
    try:
        t0 = time.monotonic()
        zygote_sock.close()
        _die_with_parent(zygote_pid)
        os.setsid()  # its own process group: closing it (killpg) ends it alone
        from ..core.cpu_sets import pin_process

        pin_process(req.get("cpus"))  # this GPU's cores, and torch's thread pools sized to them
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd)
        _send(sock, _hello(isolation, {"fork": round(time.monotonic() - t0, 4)}, pid=os.getpid(), threads=_torch_threads()))
        _serve_workers(sock, isolation)
    except BaseException:  # noqa: BLE001 - never return into the zygote's loop
        pass
    os._exit(0)


def _send(sock: socket.socket, msg: dict) -> None:
    data = json.dumps(msg).encode()
    sock.sendall(struct.pack("<I", len(data)) + data)


# ----------------------------------------------------------------------------------------------
# the judge's side


def _launch(mode: str, cuda: bool, env: dict[str, str], popen) -> tuple[subprocess.Popen, socket.socket]:
    """A fresh interpreter running this module in ``mode`` ("server" or "zygote"), and the judge's
    end of its socket."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = popen(
        [sys.executable, "-m", "kbench_lib.isolation.forkserver", str(child.fileno()), "1" if cuda else "0", str(os.getpid()), mode],
        env=env, stdin=subprocess.DEVNULL, pass_fds=(child.fileno(),), start_new_session=True,
    )
    child.close()
    return proc, parent


class _Connection:
    """A server's or zygote's process and the judge's end of its socket: framed JSON messages."""

    proc: "subprocess.Popen | _Forked"
    sock: socket.socket
    _buf: bytes

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Ends its process (its own process group: a zygote's servers and a server's workers die
        with it, as their parent)."""
        try:
            self.sock.close()
        finally:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()

    def _recv(self, timeout: float | None) -> dict | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if len(self._buf) >= 4:
                (n,) = struct.unpack("<I", self._buf[:4])
                if len(self._buf) >= 4 + n:
                    data, self._buf = self._buf[4:4 + n], self._buf[4 + n:]
                    return json.loads(data)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the fork server exited")
            self._buf += chunk


class _Forked:
    """A server forked by a zygote, as much of a Popen as :class:`ForkServer` needs: the zygote,
    its parent, collects its exit."""

    def __init__(self, pid: int):
        self.pid = pid

    def poll(self) -> int | None:
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return 0
        return 0 if state in ("Z", "X") else None

    def wait(self, timeout: float = 10.0) -> int:
        """Until it has ended (killed: the signal takes a moment to land), at most ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return 0


class ForkServer(_Connection):
    """A running fork server and a way to run one isolated worker through it at a time."""

    def __init__(self, cuda: bool, env: dict[str, str] | None = None, popen=subprocess.Popen, *, zygote: "Zygote | None" = None,
                 cpus: str | None = None):
        """Started as a process of its own (``env``; ``popen``: what starts it:
        :mod:`kbench_lib.isolation.server_pool` starts every process from one long-lived thread, since a
        server dies when the thread that started it ends), or forked by ``zygote``, kept to
        ``cpus`` (a cpulist; None: the zygote's)."""
        started = time.monotonic()
        self.cuda = cuda
        self.lock = threading.Lock()
        self._buf = b""
        if zygote is None:
            self.proc, self.sock = _launch("server", cuda, env, popen)
        else:
            self.proc, self.sock = zygote.fork(cpus)
        hello = self._recv(timeout=180)
        if not hello or hello.get("event") != "hello" or not hello.get("ok"):
            self.close()
            raise RuntimeError("the fork server did not start")
        self.isolation = int(hello["isolation"])
        self.pid_isolated = bool(hello["pid_isolated"])
        # its start, phase by phase (forked: the zygote's phases, and the fork)
        phases = {**(zygote.start_s if zygote is not None else {}), **(hello.get("start_s") or {})}
        self.start_s = {"total": round(time.monotonic() - started, 4), **phases}
        self.ready_wall = time.time()  # when it could fork its first worker
        self.threads = hello.get("threads")  # torch's thread pool, as its workers inherit it
        self._n = 0
        self._exits: dict[str, int] = {}  # workers that ended before anyone waited for them

    def spawn(self, args: list[str], workdir: str, env: dict, rw: list[str], isolate: bool, max_file_bytes: int,
              fds: list[int], fd_names: list[str] = ()) -> tuple[str, int]:
        """Starts a worker; returns (request id, C1's pid). ``fds``: the child's log and message
        pipes' write ends, then the descriptors named to it by the environment variables
        ``fd_names`` (its gate's read end, a device arena's); the caller keeps (and closes) its own."""
        if len(fds) != 2 + len(fd_names) or len(fds) > MAX_FDS:
            raise ValueError(f"{len(fds)} descriptors for {len(fd_names)} names")
        self._n += 1
        rid = f"{os.getpid()}-{self._n}"
        req = {"id": rid, "args": args, "workdir": workdir, "env": env, "rw": rw, "isolate": isolate, "max_file_bytes": max_file_bytes,
               "fd_names": list(fd_names)}
        socket.send_fds(self.sock, [json.dumps(req).encode()], list(fds))
        while True:
            msg = self._recv(timeout=60)
            if msg and msg.get("event") == "exit":  # another worker of this server ended meanwhile
                self._exits[str(msg.get("id"))] = int(msg["returncode"])
                continue
            break
        if not msg or msg.get("event") != "started" or msg.get("id") != rid:
            raise RuntimeError(f"the fork server did not start the worker: {msg}")
        return rid, int(msg["pid"])

    def wait(self, rid: str, timeout: float | None) -> int | None:
        """C1's return code (negative: killed by that signal), or None when ``timeout`` passed first.
        Several workers may run at once: the ends of the others are kept for their own waits."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while rid not in self._exits:
            msg = self._recv(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if msg is None:
                return None
            if msg.get("event") != "exit":
                raise RuntimeError(f"unexpected message from the fork server: {msg}")
            self._exits[str(msg.get("id"))] = int(msg["returncode"])
        return self._exits.pop(rid)


class Zygote(_Connection):
    """A running zygote (:func:`zygote`): one warm-up, and a fork of it per server asked for."""

    def __init__(self, cuda: bool, env: dict[str, str], popen=subprocess.Popen):
        started = time.monotonic()
        self.cuda = cuda
        self.lock = threading.Lock()
        self._buf = b""
        self._n = 0
        self.proc, self.sock = _launch("zygote", cuda, env, popen)
        hello = self._recv(timeout=180)
        if not hello or hello.get("event") != "hello" or not hello.get("ok") or not hello.get("zygote"):
            self.close()
            raise RuntimeError("the fork servers' zygote did not start")
        self.start_s = {"zygote": round(time.monotonic() - started, 4), **(hello.get("start_s") or {})}

    def fork(self, cpus: str | None) -> tuple[_Forked, socket.socket]:
        """A new server (its process, the judge's end of its socket), kept to ``cpus``."""
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with self.lock:
                self._n += 1
                rid = self._n
                socket.send_fds(self.sock, [json.dumps({"id": rid, "cpus": cpus}).encode()], [child.fileno()])
                msg = self._recv(timeout=60)
        finally:
            child.close()
        if not msg or msg.get("event") != "forked" or msg.get("id") != rid or not msg.get("pid"):
            parent.close()
            raise RuntimeError(f"the zygote did not fork a server: {msg}")
        return _Forked(int(msg["pid"])), parent


def main(argv: list[str]) -> None:
    _die_with_parent(int(argv[2]) if len(argv) > 2 else None)  # the judge killed outright takes the server with it
    from ..core.cpu_sets import apply_from_env

    apply_from_env()  # this GPU's cores (a batch over several GPUs), before torch sizes its thread pools at import
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=int(argv[0]))
    try:
        (zygote if len(argv) > 3 and argv[3] == "zygote" else serve)(sock, argv[1] == "1")
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
