"""What the worker tells the judge: JSON lines on the message pipe, tracebacks, failure categories."""
from __future__ import annotations

import json
import os
import re
import traceback

import torch

from ...core import dsl_packages

_write = os.write
_dumps = json.dumps
MAX_TRACE = 4000
# the candidate's backend, from its job: a DSL's compile errors are compile errors wherever they
# are raised (at import or in the first call), and its failures name the DSL's installed version
_BACKEND: list = [None]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # terminal colours some compilers put in their messages (CuTe DSL's)


class Channel:
    """Newline-delimited JSON messages to the judge over an inherited pipe."""

    def __init__(self):
        fd = int(os.environ.pop("KBENCH_MSG_FD", "-1"))
        self.fd = fd
        if fd >= 0:
            os.set_inheritable(fd, False)  # the candidate's own children never get it

    def send(self, **msg) -> None:
        if self.fd < 0:
            return
        data = (_dumps(msg, default=str) + "\n").encode()
        while data:
            n = _write(self.fd, data)
            data = data[n:]


_channel: Channel | None = None


def channel() -> Channel:
    """The one message channel of this process (the pipe's number is read from the environment once)."""
    global _channel
    if _channel is None:
        _channel = Channel()
    return _channel


def _trace(e: BaseException) -> str:
    text = _ANSI.sub("", "".join(traceback.format_exception(type(e), e, e.__traceback__)))[-MAX_TRACE:]
    package = dsl_packages.described(_BACKEND[0] or "")
    # which version of the DSL judged it: an API the candidate uses that this version lacks, or changed
    return f"{text.rstrip()}\n(the {_BACKEND[0]} backend's package here: {package})" if package else text


def _is_build_error(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e}"
    markers = ("Error building extension", "ninja: build stopped", "CalledProcessError", "error: command", "CompilationError")
    return (any(m in text for m in markers) or type(e).__name__ in ("CalledProcessError", "CompilationError")
            or dsl_packages.raised_compiling(e, _BACKEND[0] or ""))


def _failure_of(e: BaseException) -> str:
    if isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower():
        return "oom"
    if isinstance(e, MemoryError):
        return "oom"
    if dsl_packages.raised_compiling(e, _BACKEND[0] or ""):  # a DSL kernel compiled at its first call
        return "compile_error"
    return "runtime_error"


class _LoadError(Exception):
    pass
