"""The messages between a command and the judge service: one JSON object per line over a Unix
stream socket.

The command sends a request first (``{"argv": [...], "cwd": ..., "env": {...}, "isatty": [out, err]}``,
or ``{"status": true}``, or ``{"stop": true}``), then at most ``{"interrupt": true}`` (Ctrl-C). The
service answers a command with ``{"out": text}`` and ``{"err": text}`` as it writes them and ends
with ``{"exit": status}`` (first ``{"waiting": n}`` where ``n`` commands are ahead of it); a status
or stop request with one object, at once, even while a command runs.
"""
from __future__ import annotations

import json
import socket
import threading

MAX_LINE = 1 << 24  # a request carries the environment: generous, yet bounded


def send(sock: socket.socket, obj: dict, lock: threading.Lock | None = None) -> None:
    data = (json.dumps(obj) + "\n").encode()
    if lock is None:
        sock.sendall(data)
    else:
        with lock:
            sock.sendall(data)


class Lines:
    """The JSON objects arriving on ``sock``, one per line; None at the end of the stream (or a
    line that is not JSON, or longer than :data:`MAX_LINE`)."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buf = sock, b""

    def next(self) -> dict | None:
        while b"\n" not in self.buf:
            if len(self.buf) > MAX_LINE:
                return None
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                return None
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None
