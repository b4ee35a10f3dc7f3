"""The command's side of the judge service: :func:`forward` hands a ``kbench`` command to the
service of its key (:mod:`.key`), starting one where none runs, relays what the service writes
and returns the command's exit status.

``KBENCH_SERVE`` chooses: unset or ``auto``, a command starts the service of its key where none
runs (it says so in one line; the service then stays for later commands until idle,
:data:`.daemon.DEFAULT_IDLE_S`); ``use``, a command uses a running service and otherwise runs in
its own process; ``off``, every command runs in its own process. A service that cannot be reached
or started in :data:`START_WAIT_S` leaves the command to run in its own process, with one line
saying so. A service that ends while it runs a command (a crash of the judge itself) ends the
command with exit status 4 and one line: the verdicts it recorded are kept, and the same
``--run-id`` goes on.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from . import key as keys
from .daemon import DEFAULT_IDLE_S
from .wire import Lines, send

MODE_ENV = "KBENCH_SERVE"
START_WAIT_S = 120.0  # a service's start: the interpreter, torch and the judge imported
LOST = 4


def mode() -> str:
    """``auto`` (the default), ``use`` or ``off``, from ``KBENCH_SERVE``."""
    value = os.environ.get(MODE_ENV, "").strip().lower()
    if value in ("off", "0", "no", "false"):
        return "off"
    return "use" if value == "use" else "auto"


def connect(key: str, timeout_s: float = 0.0) -> socket.socket | None:
    """A connection to ``key``'s service, waiting up to ``timeout_s`` for it to listen; None without one."""
    path = str(keys.socket_path(key))
    deadline = time.monotonic() + timeout_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def start(key: str, idle_timeout_s: float | None = None) -> subprocess.Popen:
    """Starts ``key``'s service in a session of its own, its output in its log. It serves under
    ``key`` as given: its own environment differs from the command's by this package's folder on
    ``PYTHONPATH`` (so that it imports this ``kbench_lib`` from ``/``), and each command runs with
    the command's own environment."""
    cmd = [sys.executable, "-m", "kbench_lib.cli", "serve", "--key", key]
    if idle_timeout_s is not None:
        cmd += ["--idle-timeout", f"{idle_timeout_s:g}"]
    env = {k: v for k, v in os.environ.items() if k != MODE_ENV}
    pkg_root = str(keys.PACKAGE.parent)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(keys.log_path(key), "ab") as log:
        return subprocess.Popen(cmd, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def forward(argv: list[str], prog: str = "kbench") -> int | None:
    """Runs ``argv`` (a ``kbench`` command line) in the service of this process's key; its exit
    status, or None where the command is to run here (the service is off, none runs and none is
    to be started, or it could not start)."""
    how = mode()
    if how == "off":
        return None
    try:
        key = keys.service_key()
        sock = connect(key)
        if sock is None:
            if how != "auto":
                return None
            proc = start(key)
            sock = _wait_for(key, proc)
            if sock is not None and proc.poll() is None:  # this command started it (not another that won the key)
                print(f"{prog}: started the judge service (pid {proc.pid}); it keeps torch and the fork servers warm for "
                      f"later commands until idle for {DEFAULT_IDLE_S / 60:g} min (kbench serve --stop ends it; "
                      f"KBENCH_SERVE=off judges in the command's own process)", file=sys.stderr, flush=True)
    except OSError as e:  # no private folder for the socket, no process to start: this process runs it
        print(f"{prog}: the judge service is not available ({e}); judging in this process", file=sys.stderr)
        return None
    if sock is None:
        print(f"{prog}: the judge service did not start within {START_WAIT_S:g} s (log: {keys.log_path(key)}); "
              "judging in this process", file=sys.stderr)
        return None
    with sock:
        return _relay(sock, argv, key, prog)


def _wait_for(key: str, proc: subprocess.Popen) -> socket.socket | None:
    """The new service's connection once it listens; None where it ended first (another service
    won the key's lock: that one's), or did not listen in time."""
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        sock = connect(key, 0.2)
        if sock is not None:
            return sock
        if proc.poll() is not None:  # it ended: another one may hold the key and listen soon
            return connect(key, max(0.0, min(5.0, deadline - time.monotonic())))
    return None


def _relay(sock: socket.socket, argv: list[str], key: str, prog: str) -> int:
    send(sock, {"argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ),
                "isatty": [sys.stdout.isatty(), sys.stderr.isatty()]})
    lines = Lines(sock)
    interrupted = False
    while True:
        try:
            msg = lines.next()
        except KeyboardInterrupt:
            if interrupted:  # a second Ctrl-C: leave now; the service ends the command as it would end here
                return 130
            interrupted = True
            try:
                send(sock, {"interrupt": True})
            except OSError:
                pass
            continue
        if msg is None:
            print(f"{prog}: the judge service ended during the command (log: {keys.log_path(key)}); the verdicts it "
                  "recorded are kept: run the command again with its --run-id to go on", file=sys.stderr)
            return LOST
        if "waiting" in msg:
            print(f"{prog}: the judge service is busy with another command; this one waits its turn", file=sys.stderr, flush=True)
        elif "out" in msg:
            sys.stdout.write(msg["out"])
            sys.stdout.flush()
        elif "err" in msg:
            sys.stderr.write(msg["err"])
            sys.stderr.flush()
        elif "exit" in msg:
            return int(msg["exit"])


def request(obj: dict) -> dict | None:
    """One status or stop request to this process's key's service; its answer, or None where none runs."""
    sock = connect(keys.service_key())
    if sock is None:
        return None
    with sock:
        send(sock, obj)
        return Lines(sock).next()
