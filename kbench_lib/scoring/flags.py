"""Every flag the judge can raise, and what it means for whoever calls the kernel.

A flag is a line of text, ``"<name>: <why>"``, in a verdict's ``flags``; a correct result with a
flag is not taken at face value. Each name has a class, by what it says about the result:

- ``cheat``: evidence that the result or its measurement was falsified, or that the judge was
  attacked; also the judge's own evidence missing or forged where a candidate can cause that (no
  profile, a malformed one, no timed output left to re-check);
- ``hazard``: the result is right, but the kernel is unsafe for a caller (it keeps and rewrites its
  output buffer, returns a view of an input, changes process-wide settings, touches the environment,
  imports something with no use in a kernel);
- ``shortcut``: right and safe, but not the custom work the benchmark asks for (the library did it,
  or the task cannot tell work from no work).

A name this registry does not know is a ``cheat``: the judge cannot vouch for it.

A trust policy says which flags keep a correct result from counting: ``strict`` (any flag; the
default everywhere) or ``no-cheat`` (only a cheat-class flag). Each flag also names the docs/THREAT_MODEL.md
class it belongs to (:data:`THREAT`; ``kbench_lib.analysis.failures`` groups flags by it).

Pure Python: imported by the metrics and the analyses, never by the candidate's process.
"""
from __future__ import annotations

from typing import NamedTuple

CLASSES = ("cheat", "hazard", "shortcut")
POLICIES = ("strict", "no-cheat")

_PASSTHROUGH = "#1-3 library passthrough, fallback, decoy"
_MEMO = "#8 memoisation"
_JUDGE = "#14-15 patched judge, harness tampering"
_SETTINGS = "#17 global settings"
_UNCHECKED = "judge could not check"


class Flag(NamedTuple):
    cls: str  # cheat, hazard or shortcut
    threat: str  # the threat class (docs/THREAT_MODEL.md)
    meaning: str  # one line


FLAGS: dict[str, Flag] = {
    # cheat: the result or its measurement was falsified, or the judge attacked
    "output_reused": Flag("cheat", _MEMO, "a timed call returned the tensor it returned for the same input set earlier (a cached result)"),
    "memoisation_suspected": Flag("cheat", _MEMO, "repeats on seen inputs much faster than first calls on new ones"),
    "side_stream_unjoined": Flag("cheat", "#11 side-stream work", "work left running on another stream, outside the timed window"),
    "threads_started": Flag("cheat", "#12 thread work", "threads still running after the calls"),
    "processes_started": Flag("cheat", "#12 thread work", "processes the candidate started still running after the calls"),
    "patches_library": Flag("cheat", _JUDGE, "assigns to a library function, class or timer (monkey-patching)"),
    "timer_tampered": Flag("cheat", _JUDGE, "the harness's timers were replaced during the run"),
    "harness_tampered": Flag("cheat", _JUDGE, "the harness's functions or state were replaced during the run"),
    "input_drawing_tampered": Flag("cheat", _JUDGE, "timed input sets drawn out of the harness's order, or its drawing functions replaced"),
    "introspection": Flag("cheat", _JUDGE, "reaches frames, live objects, other modules or builtins (can find the harness's internals)"),
    "dynamic_code": Flag("cheat", _JUDGE, "runs code the judge cannot read (exec, eval, compile, __import__)"),
    "profile_malformed": Flag("cheat", _JUDGE, "the run's profile message was forged or broken"),
    "profile_missing": Flag("cheat", _UNCHECKED, "the run reported no profile of the candidate's forward"),
    "timing_unchecked": Flag("cheat", _UNCHECKED, "no timed output could be sampled for the re-check"),
    # not the candidate's doing: the judge was asked to check nothing (a benchmark of what the guards
    # cost); a cheat, so that no trust policy counts a result nobody vouched for
    "guards_off": Flag("cheat", _UNCHECKED, "judged with every guard off (JudgeOptions(guards=False)): correctness and timing only"),
    # hazard: the result is right, the kernel unsafe for a caller
    "static_output_buffer": Flag("hazard", "kept output buffer (rewritten each call, not memoisation)", "returns a buffer it keeps and rewrites each call: a caller's earlier result changes under it"),
    "output_aliases_input": Flag("hazard", "#5 input mutation", "an output shares storage with an input"),
    "global_settings_changed": Flag("hazard", _SETTINGS, "process-wide torch settings differ after a call"),
    "changes_settings": Flag("hazard", _SETTINGS, "sets process-wide settings in its source (torch.backends, compiler configs, global numerics)"),
    "environment_access": Flag("hazard", "#19 secrets and escape", "reads or writes the process environment"),
    "suspect_import": Flag("hazard", "static: suspect import", "imports a module with no use in a kernel (threads, processes, network, raw memory)"),
    "context_lost": Flag("hazard", _UNCHECKED, "another configuration's failure left the CUDA context unusable: the run stopped before its profile and timed calls"),
    # shortcut: right and safe, not the custom work asked for
    "no_custom_kernel": Flag("shortcut", _PASSTHROUGH, "a cuda, cpp, triton, cute or tilelang candidate that neither defines nor loads a kernel"),
    "library_passthrough": Flag("shortcut", _PASSTHROUGH, "the forward ran all of the reference's compute ops itself"),
    "library_does_the_work": Flag("shortcut", _PASSTHROUGH, "the candidate's own kernels took a negligible share of its device time"),
    "degenerate_task": Flag("shortcut", "#6 degenerate task", "the task's output is (nearly) constant: zeros or a constant pass it"),
    # the bound counts the reference's own work: a kernel under it does less (an algebraic rewrite such as
    # diag(a) @ b as a row scaling, a constant answer to a degenerate task); a faked time is named by the
    # timing checks above, for which this is a backstop under strict trust
    "faster_than_light": Flag("shortcut", "#20 impossible speed", "timed below the roofline bound of the reference's own work: it does less work than the reference"),
    "profile_failed": Flag("shortcut", _UNCHECKED, "the profile of the forward failed, so the passthrough checks could not run"),
}

# flag name -> threat class (docs/THREAT_MODEL.md) (the analyses' grouping)
THREAT: dict[str, str] = {name: f.threat for name, f in FLAGS.items()}


class UnknownFlagPolicy(ValueError):
    pass


def flag_name(text) -> str:
    """The flag's name: its text before the first colon, stripped."""
    return str(text).split(":", 1)[0].strip()


def flag_class(text) -> str:
    """``cheat``, ``hazard`` or ``shortcut`` for one flag (its text or its name); ``cheat`` for a
    name the registry does not know."""
    f = FLAGS.get(flag_name(text))
    return f.cls if f else "cheat"


def _items(flags) -> list:
    """A verdict's or a record's flags as a list: None (and a null read from a table) is none."""
    if isinstance(flags, str):  # one flag's text
        return [flags] if flags else []
    if flags is None or not hasattr(flags, "__len__"):  # None, or NaN in a pandas object column
        return []
    return list(flags)


def classes(flags) -> list[str]:
    """The classes of ``flags``, each once, in :data:`CLASSES` order."""
    found = {flag_class(f) for f in _items(flags)}
    return [c for c in CLASSES if c in found]


def check_policy(name) -> str:
    """``name`` if it is a policy (None or '' is ``strict``); else :class:`UnknownFlagPolicy`."""
    if name is None or name == "":
        return "strict"
    if name not in POLICIES:
        raise UnknownFlagPolicy(f"unknown trust policy {name!r}: choose one of {', '.join(POLICIES)}")
    return name


def counts_against(text, policy="strict") -> bool:
    """Whether one flag keeps a correct result from being trusted under ``policy``."""
    return check_policy(policy) == "strict" or flag_class(text) == "cheat"


def counted(flags, policy="strict") -> list:
    """The flags among ``flags`` that keep a correct result from being trusted under ``policy``, in order."""
    policy = check_policy(policy)
    return [f for f in _items(flags) if counts_against(f, policy)]


def distrusted(flags, policy="strict") -> bool:
    """Whether ``flags`` hold one that keeps a correct result from being trusted under ``policy``."""
    return bool(counted(flags, policy))


def _true(x) -> bool:
    try:
        return bool(x) and x == x  # NaN, a null read from a table, is not correct
    except TypeError:  # pandas' NA
        return False


def trusted(correct, flags, policy="strict") -> bool:
    """strict: correct and no flag; no-cheat: correct and no flag of class cheat."""
    return _true(correct) and not distrusted(flags, policy)
