"""The reference store: the judge's own measurements of a problem's reference (its eager baseline,
each timed variant's, its profile), kept on disk and reused by later batches and other processes
instead of measured again for every :class:`~kbench_lib.judging.prepared.PreparedProblem`.

Also each configuration's FLOP and byte count behind the roofline bound (:func:`count_key`):
counting runs the model under the FLOP counter, for real on the CPU where the meta device lacks an
operator (recurrent layers), seconds in every batch.

A level-3 reference runs hundreds of kernels per forward; timing it and profiling it again in
every batch cost tens of seconds per problem. What is measured depends on the reference's code and
shapes, the device and the software, and the timing options, never on the values of its inputs
(the seeds are fresh in every batch, the shapes are not), so one measurement serves every batch
that would make the same one.

**The key** of an entry is everything the measurement depends on (:func:`base_key` and the callers'
additions in ``prepared.py``): the schema version (:data:`SCHEMA`); what is measured (``kind``:
``eager`` timing or ``profile``); the problem's source text (sha-256 of it, so an edited file,
upstream-format files included, is a new entry; its key too, for reading); precision; SMALL or full
size; the configuration (name and its overrides: the sizes); the device (name, and on a GPU its
capability, SM count and memory, which tell a MIG slice from the whole GPU; on the CPU its model
and core count); the software (torch, CUDA, cuDNN, Triton where present, Python, the GPU driver);
a hash of the measuring code itself (:func:`code_sha`: ``kbench_lib/measure/``,
``suite/reference.py``, ``judging/prepared.py``; a change of the timing discipline is a new
entry); and, for a timing, the task (forward or backward), the number of timed and warm-up input
sets of the rotation and the options ``_time_reference`` hands to ``time_callable``
(``warmup_ms``, ``min_trials``, ``max_trials``, ``timing_budget_s``, ``target_rse``).

**On disk**: one small JSON file per entry, ``<problem>-<kind>-<hash>.json`` under
``$KBENCH_REFERENCE_STORE``, else ``$KBENCH_CACHE/reference`` (the build cache's root, default
``~/.cache/kbench``); the hash is of the key, and the key is also stored inside and compared on
every read: an entry whose key differs in anything is never used. A file that cannot be read or
parsed, or whose value does not decode, counts as absent: the reference is measured again and the
entry overwritten. Files are written to a temporary name and moved into place (``os.replace``), so
a reader never sees half an entry; two processes measuring the same entry both write it, the last
one stays. Writing failures are ignored (the store only saves time). Clearing it: delete the folder.
The folder is not among those a candidate's sandbox may write (:func:`kbench_lib.judging.build.writable_dirs`:
its own build entry and Triton's cache), so a candidate cannot forge the baseline later batches
read (where the read-only mounts are unavailable, ``KBENCH_FS_READONLY=0``, it could write to the
whole cache anyway, builds included).

**Which devices**: ``JudgeOptions.reference_store`` is ``None`` by default, meaning CUDA devices
only; ``True`` uses it on any device, ``False`` (``--no-reference-store``) never reads or writes it.
The CPU is left out by default because its clock is shared with whatever else the machine runs: a
CPU baseline measured under one load and reused under another would compare a candidate timed now
with a reference timed then, and CPU judging (SMALL shapes) is cheap to measure anyway. The CPU
path is the same code, and the tests exercise it with ``reference_store=True``.

Where a measurement came from is visible: :attr:`PreparedProblem.stored` names each one read from
the store (with the seconds the read took), :meth:`PreparedProblem.measure_now` reports it as
``<name>.stored``, and a verdict's ``stage_s`` (the records' ``judge_stages``) has
``baseline.stored``, ``variant_baseline.stored`` and ``reference_profile.stored`` (seconds of the
read) where it used a stored one.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import platform
import re
import sys
import tempfile
from pathlib import Path

import torch

from ..measure.timing import Timing
from ..core.paths import cache_root
from ..core.provenance import device_name, driver_version, triton_version

SCHEMA = 1
ENV_DIR = "KBENCH_REFERENCE_STORE"  # the store's folder (default: $KBENCH_CACHE/reference)
PACKAGE = Path(__file__).resolve().parent.parent
CODE = ("measure", "suite/reference.py", "judging/prepared.py")  # the measuring code, under kbench_lib/
TIMING_OPTIONS = ("warmup_ms", "min_trials", "max_trials", "timing_budget_s", "target_rse")


def root() -> Path:
    """The store's folder: ``$KBENCH_REFERENCE_STORE``, else ``reference`` under the build cache's root."""
    override = os.environ.get(ENV_DIR)
    return Path(override) if override else cache_root() / "reference"


def enabled(setting: bool | None, device: str) -> bool:
    """Whether the store is used on ``device`` under ``JudgeOptions.reference_store`` (``None``: on CUDA devices only)."""
    if setting is None:
        return device.startswith("cuda")
    return bool(setting)


@functools.lru_cache(maxsize=None)
def code_sha(paths: tuple[str, ...] = CODE) -> str:
    """sha-256 over source files under ``kbench_lib/`` (default: the measuring code, :data:`CODE`)."""
    h = hashlib.sha256()
    for rel in paths:
        path = PACKAGE / rel
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(f.relative_to(PACKAGE).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=None)
def machine(device: str) -> dict:
    """The device and software a measurement on ``device`` depends on."""
    out = {"device_name": device_name(device), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "triton": triton_version(), "python": platform.python_version(), "implementation": sys.implementation.name}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        out.update(capability=f"{props.major}.{props.minor}", sm_count=props.multi_processor_count,
                   memory=props.total_memory, driver=driver_version())
    else:
        out.update(cpu_model=_cpu_model(), cpu_count=os.cpu_count())
    return out


def source_sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def base_key(kind: str, problem, device: str, precision: str, small: bool, config) -> dict:
    """What every entry's key holds: the measurement's kind, the problem (its source's hash), the
    precision, size and configuration, the device and software, the measuring code, the schema."""
    return {"schema": SCHEMA, "kind": kind, "problem": problem.key, "source_sha256": source_sha(problem.source),
            "task": problem.task, "precision": precision, "small": bool(small),
            "config": {"name": config.name, "overrides": config.overrides}, "machine": machine(device), "code": code_sha()}


def count_key(problem, precision: str, small: bool, config) -> dict:
    """The key of a configuration's FLOP and byte count (``suite/roofline.py``'s ``count``): the
    problem's source, precision, size and configuration, torch (its FLOP counter's formulas) and
    the counting code; no device (the count is the same on every one; its bound is not, and is
    worked out from the count on each read)."""
    return {"schema": SCHEMA, "kind": "count", "problem": problem.key, "source_sha256": source_sha(problem.source),
            "task": problem.task, "precision": precision, "small": bool(small),
            "config": {"name": config.name, "overrides": config.overrides}, "torch": torch.__version__,
            "code": code_sha(("suite/roofline.py",))}


def decode_count(d) -> dict | None:
    """A stored count (``{'flops', 'bytes'}``, numbers), None if it is not one."""
    if not isinstance(d, dict) or not all(_number(d.get(k), none=False) for k in ("flops", "bytes")):
        return None
    return d


def timing_key(opts) -> dict:
    """The timing options that change what ``_time_reference`` measures."""
    return {name: getattr(opts, name) for name in TIMING_OPTIONS}


def _canonical(key: dict) -> dict:
    """``key`` as it reads back from JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(key, sort_keys=True, default=str))


def roundtrip(value):
    """``value`` as a read of it from the store gives it back."""
    return json.loads(json.dumps(value))


def path_for(key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(_canonical(key), sort_keys=True).encode()).hexdigest()[:32]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{key.get('problem', 'problem')}-{key.get('kind', 'entry')}")
    return root() / f"{name}-{digest}.json"


def lookup(key: dict):
    """The value stored under ``key``, or None: absent, unreadable, corrupt, or stored under another key."""
    path = path_for(key)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):  # absent, unreadable, not JSON (UnicodeDecodeError is a ValueError)
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("key") != _canonical(key) or "value" not in data:
        return None
    return data["value"]


def remember(key: dict, value, measured_s: float) -> Path | None:
    """Stores ``value`` under ``key`` (atomically: a temporary file moved into place); the path, or
    None where it could not be written (the store only saves time: nothing fails for it)."""
    path = path_for(key)
    entry = {"schema": SCHEMA, "key": _canonical(key), "measured_s": round(measured_s, 3), "pid": os.getpid(), "value": value}
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(entry, sort_keys=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp", delete=False) as f:
            tmp = f.name
            f.write(text)
        os.chmod(tmp, 0o644)  # as any other file of the cache (a temporary file is the owner's alone)
        os.replace(tmp, path)
        return path
    except (OSError, TypeError, ValueError):
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return None


_TIMING_FIELDS = frozenset(f.name for f in dataclasses.fields(Timing))


def encode_timing(t: Timing) -> dict:
    return t.as_dict()


def _number(x, none: bool = True) -> bool:
    return (x is None and none) or (isinstance(x, (int, float)) and not isinstance(x, bool))


def decode_timing(d) -> Timing | None:
    """A :class:`Timing` from its stored fields: exactly those of the dataclass, numbers (or null)
    where it has numbers, ``median_ms`` a number; None for anything else."""
    if not isinstance(d, dict) or set(d) != _TIMING_FIELDS or not _number(d["median_ms"], none=False):
        return None
    if not isinstance(d["phase_s"], dict) or not all(isinstance(k, str) and _number(v, none=False) for k, v in d["phase_s"].items()):
        return None
    if not (d["trace"] is None or isinstance(d["trace"], list)):
        return None
    if not all(_number(v) for k, v in d.items() if k not in ("phase_s", "trace")):
        return None
    return Timing(**d)


def decode_profile(d) -> dict | None:
    """A stored profile (:func:`kbench_lib.measure.profiling.profile_call`'s dict), None if it is not one."""
    if not isinstance(d, dict) or not isinstance(d.get("ops"), dict) or not {"n_kernels", "kernels"} <= set(d):
        return None
    return d


def mark_stored(stage_s: dict, prep, names, stage: str) -> None:
    """Into a verdict's ``stage_s``: ``<stage>.stored``, the seconds the store's reads of the
    measurements ``names`` took, where any of them came from the store."""
    stored = getattr(prep, "stored", None) or {}
    secs = [stored[n] for n in names if n in stored]
    if secs:
        stage_s[f"{stage}.stored"] = round(sum(secs), 3)


__all__ = ["SCHEMA", "ENV_DIR", "root", "enabled", "base_key", "count_key", "decode_count", "timing_key", "path_for", "lookup", "remember", "roundtrip",
           "encode_timing", "decode_timing", "decode_profile", "mark_stored", "code_sha", "machine"]
