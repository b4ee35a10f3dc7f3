"""Failure messages that start at the candidate's own code.

A traceback from the candidate's process begins in the harness (``kbench_lib/isolation/worker/``, torch's
module-call machinery, importlib) before it reaches the file the candidate wrote. Its author
needs the frames from their own file on: the frames before the first frame in the candidate's
file are replaced by one line that says how many were hidden, and the job directory's temporary
path is shortened to ``candidate.py``.

This works on the traceback's text (what the worker sends back), so it is a pure function of a
string: a message with no candidate frame, or text that is not a traceback, comes back unchanged.
Each traceback of a chain ("During handling of the above exception ...") is trimmed on its own.
"""
from __future__ import annotations

import re

CANDIDATE_FILE = "candidate.py"  # the judge writes the candidate's source under this name in its job dir
_FRAME = re.compile(r'^  File "(?P<path>[^"]+)", line \d+, in ')


def is_candidate_path(path: str) -> bool:
    """Whether a traceback's file path is the candidate's source file."""
    return path.replace("\\", "/").rsplit("/", 1)[-1] == CANDIDATE_FILE


def _frames(lines: list[str], start: int) -> tuple[list[list[str]], int]:
    """The frames of one run of frames beginning at ``lines[start]``: each its ``File`` line plus
    the indented lines that follow (source, carets, "[Previous line repeated ...]"); and the index
    of the first line after the run."""
    frames: list[list[str]] = []
    i = start
    while i < len(lines):
        if _FRAME.match(lines[i]):
            frames.append([lines[i]])
        elif frames and lines[i].startswith("  ") and lines[i].strip():
            frames[-1].append(lines[i])
        else:
            break
        i += 1
    return frames, i


def _shorten(frame: list[str]) -> list[str]:
    m = _FRAME.match(frame[0])
    return [frame[0].replace(f'"{m.group("path")}"', f'"{CANDIDATE_FILE}"', 1), *frame[1:]]


def _trim_run(frames: list[list[str]]) -> list[str]:
    first = next((k for k, f in enumerate(frames) if is_candidate_path(_FRAME.match(f[0]).group("path"))), None)
    if first is None:
        return [line for f in frames for line in f]
    out = [f"  [{first} frame{'s' if first != 1 else ''} of the harness hidden]"] if first else []
    for f in frames[first:]:
        path = _FRAME.match(f[0]).group("path")
        out += _shorten(f) if is_candidate_path(path) else f
    return out


def candidate_frames_first(text: str | None) -> str | None:
    """``text`` with every traceback in it starting at the candidate's first frame (see module doc)."""
    if not text or "File " not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _FRAME.match(lines[i]):
            frames, i = _frames(lines, i)
            out += _trim_run(frames)
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)
