"""The judge service's side: it listens on its key's socket and runs the commands handed to it,
one at a time, each as ``kbench`` itself would run it (:func:`serve`'s ``run``), with the command's
environment, working folder, output and Ctrl-C.

What a command gets is what it would get in its own process: the same judge, sandbox and guards,
the same records. What it finds already done is what a notebook's second batch finds: torch
imported, the fork servers started, the reference side's store read. One command at a time: a
second one waits for the first (the GPU is the judge's alone while it times). A service holds a
lock for its key for as long as it lives, so a second one started for the same key ends at once;
it ends by itself once no command has come for ``idle_timeout_s``.
"""
from __future__ import annotations

import contextlib
import fcntl
import io
import os
import queue
import signal
import socket
import sys
import threading
import time
import traceback

from . import key as keys
from .wire import Lines, send

DEFAULT_IDLE_S = 900.0


class _Relay(io.TextIOBase):
    """A command's stdout or stderr inside the service: each write sent to the command as it is made."""

    def __init__(self, sock: socket.socket, lock: threading.Lock, stream: str, tty: bool):
        self.sock, self.lock, self.stream, self.tty = sock, lock, stream, tty
        self.lost = False

    def write(self, text: str) -> int:
        if text and not self.lost:
            try:
                send(self.sock, {self.stream: text}, self.lock)
            except OSError:  # the command went away: its work goes on to its end, and its records are kept
                self.lost = True
        return len(text)

    def isatty(self) -> bool:
        return self.tty

    def writable(self) -> bool:
        return True


class _Stopped(BaseException):
    """SIGTERM, or Ctrl-C with no command in hand: the service ends (with SIGTERM, the command in
    hand with it; the records it wrote are kept)."""


def _on_sigterm(signum, frame):
    raise _Stopped


class _Request:
    """The state of the command in hand: whether Ctrl-C may interrupt it, and which command it is
    (a watcher interrupts only its own)."""

    def __init__(self):
        self.running = threading.Event()
        self.current = 0


def _on_sigint(request: _Request):
    """Ctrl-C in the service's own terminal: the command in hand is interrupted; with none, the service ends."""
    def handler(signum, frame):
        if request.running.is_set():
            raise KeyboardInterrupt
        raise _Stopped
    return handler


def _on_interrupt(request: _Request):
    """SIGUSR1, sent by a command's watcher: that command is interrupted, as by Ctrl-C in its own process."""
    def handler(signum, frame):
        if request.running.is_set():
            raise KeyboardInterrupt
    return handler


def _watch(lines: Lines, request: _Request, mine: int) -> None:
    """Command ``mine``'s later messages: Ctrl-C, or the command gone (its end of the socket closed),
    interrupt it as Ctrl-C would interrupt it in its own process; once it has ended, nothing."""
    while True:
        msg = lines.next()
        if msg is None or msg.get("interrupt"):
            if request.running.is_set() and request.current == mine:
                os.kill(os.getpid(), signal.SIGUSR1)
            return


@contextlib.contextmanager
def _as_the_command(req: dict):
    """The command's environment and working folder for the time it runs."""
    env, cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
    try:
        os.chdir(req.get("cwd") or cwd)
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)


def _run_command(conn: socket.socket, lines: Lines, req: dict, run, request: _Request) -> int:
    lock = threading.Lock()
    tty = list(req.get("isatty") or [False, False]) + [False, False]
    out, err = _Relay(conn, lock, "out", bool(tty[0])), _Relay(conn, lock, "err", bool(tty[1]))
    request.current += 1
    watcher = threading.Thread(target=_watch, args=(lines, request, request.current), name="kbench-serve-watch", daemon=True)
    watcher.start()
    code = 1
    with _as_the_command(req), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        request.running.set()
        try:
            code = run(list(req["argv"]))
        except _Stopped:
            print("kbench: the judge service was stopped", file=sys.stderr)
            raise
        except KeyboardInterrupt:
            print("kbench: interrupted", file=sys.stderr)
            code = 130
        except SystemExit as e:  # argparse's errors and a command's own exit
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - the command's failure is its own: reported to it, the service goes on
            traceback.print_exc()
            code = 1
        finally:
            request.running.clear()
        sys.stdout.flush()
    with contextlib.suppress(OSError):  # a command gone before its end: nothing to tell it
        send(conn, {"exit": int(code or 0)}, lock)
        conn.shutdown(socket.SHUT_RDWR)  # its watcher sees the end now, before the socket is closed
    watcher.join(timeout=5)
    return code


def _status(key: str, started: float, served: int) -> dict:
    """The service's pid, key, age and commands served, and where its fork servers' starts went
    (seconds per phase, :attr:`kbench_lib.isolation.forkserver.ForkServer.start_s`)."""
    from ..isolation import server_pool

    return {"pid": os.getpid(), "key": key, "up_s": round(time.time() - started, 1), "served": served,
            "servers_start_s": [s.start_s for s in server_pool.started_servers()]}


def _lock(key: str):
    """This key's lock, held for the service's life; None where another service holds it."""
    f = open(keys.lock_path(key), "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


def _listen(key: str) -> socket.socket:
    path = keys.socket_path(key)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a socket left by a service that died: the lock says none lives
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(16)
    return sock


def serve(key: str, run, idle_timeout_s: float = DEFAULT_IDLE_S, on_ready=None) -> int:
    """Serves ``key``'s commands until idle for ``idle_timeout_s``, asked to stop or sent SIGTERM:
    ``run(argv) -> exit status`` runs one. ``on_ready()`` is called once the socket listens (the
    service may start its fork servers then). 0 at its end; 3 where another service holds the key."""
    held = _lock(key)
    if held is None:
        print(f"kbench serve: a service for key {key} is running already", file=sys.stderr)
        return 3
    sock = _listen(key)
    request = _Request()
    signal.signal(signal.SIGINT, _on_sigint(request))
    signal.signal(signal.SIGUSR1, _on_interrupt(request))
    signal.signal(signal.SIGTERM, _on_sigterm)
    print(f"kbench serve: pid {os.getpid()}, key {key}, socket {keys.socket_path(key)}", flush=True)
    try:
        if on_ready is not None:
            on_ready()
        return _accept_loop(key, sock, run, idle_timeout_s, request)
    except _Stopped:
        print("kbench serve: stopped", flush=True)
        return 0
    finally:
        with contextlib.suppress(FileNotFoundError):
            keys.socket_path(key).unlink()
        sock.close()
        held.close()


_STOP = object()


def _accept(sock: socket.socket, commands: "queue.Queue", key: str, started: float, counts: dict, request: _Request) -> None:
    """The acceptor's thread: every connection's first message read; a status or stop request
    answered at once (even while a command runs), a command queued for the main thread."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:  # the socket closed: the service is ending
            return
        threading.Thread(target=_first_message, args=(conn, commands, key, started, counts, request), daemon=True,
                         name="kbench-serve-conn").start()


def _first_message(conn: socket.socket, commands: "queue.Queue", key: str, started: float, counts: dict, request: _Request) -> None:
    lines = Lines(conn)
    req = lines.next() or {}
    if req.get("status") or req.get("stop"):
        with conn:
            with contextlib.suppress(OSError):
                send(conn, {**_status(key, started, counts["served"]), "busy": request.running.is_set(), "waiting": commands.qsize()})
        if req.get("stop"):
            commands.put(_STOP)
        return
    if not isinstance(req.get("argv"), list):
        conn.close()
        return
    if request.running.is_set() or commands.qsize():
        with contextlib.suppress(OSError):
            send(conn, {"waiting": commands.qsize() + int(request.running.is_set())})
    commands.put((conn, lines, req))


def _accept_loop(key: str, sock: socket.socket, run, idle_timeout_s: float, request: _Request) -> int:
    """Commands one at a time, in this (the main) thread, until idle for ``idle_timeout_s`` or a stop request."""
    started, last = time.time(), time.monotonic()
    counts = {"served": 0}
    commands: queue.Queue = queue.Queue()
    sock.settimeout(None)
    threading.Thread(target=_accept, args=(sock, commands, key, started, counts, request), daemon=True,
                     name="kbench-serve-accept").start()
    while True:
        try:
            item = commands.get(timeout=max(0.1, idle_timeout_s - (time.monotonic() - last)))
        except queue.Empty:
            print(f"kbench serve: idle for {idle_timeout_s:g} s, ending", flush=True)
            return 0
        if item is _STOP:
            print("kbench serve: asked to stop", flush=True)
            return 0
        conn, lines, req = item
        with conn:
            print(f"kbench serve: {' '.join(map(str, req['argv']))}", flush=True)
            _run_command(conn, lines, req, run, request)
        counts["served"] += 1
        last = time.monotonic()
