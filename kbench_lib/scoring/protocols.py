"""Protocols: which of a judgement's configurations, at which tolerance, decide ``correct``.

A judgement checks every configuration (the default, the problem's declared variants, the variants
derived from its size constants) and keeps, per configuration, a :data:`ConfigResult` dict:

``config``        the configuration's name
``kind``          ``default``, ``declared`` or ``derived``
``checked``       False when no set of it could be checked (``reason`` says why)
``hard_failure``  a failure no tolerance removes (``shape_mismatch``, ``dtype_mismatch``, ``nonfinite``,
                  ``input_mutated``, ``runtime_error``, ``crash``, ...), or None
``tol_needed``    the smallest t for which ``allclose(out, ref, atol=t, rtol=t)`` passes on every set,
                  output and gradient of it (max |out - ref| / (1 + |ref|)); None when nothing compared
``max_abs_err``   the largest absolute error
``ref_tf32_tol``  ``tol_needed`` of the reference itself run with TF32 on (fp32 only, measured when a
                  candidate's error on it is over the fp32 tolerance), else None
``passed``, ``failure``, ``message``   the configuration under the verdict's own protocol

Under a protocol a configuration passes when it was checked, has no hard failure, and its
``tol_needed`` is within the protocol's tolerance for the run's precision
(:func:`config_passes`); :func:`decide` reads a whole judgement. This module is pure Python: the
metrics read old records under any protocol with it, without judging again.

- ``kbench`` (default): every configuration; fp32 1e-4, fp16 and bf16 1e-2.
- ``kernelbench``: the default configuration only (the problem's declared shape); fp32 1e-4, fp16
  and bf16 1e-2 (upstream KernelBench's current rule).
- ``kernelbench-v0``: the default configuration only; atol = rtol = 1e-2 for every precision
  (upstream's first release).

Why a rejection happened (:func:`decide`'s ``cause``), countable in the records:

- ``shape_specialisation``: the default configuration passes and a variant fails (hard-coded sizes,
  missing masks);
- ``reduced_precision``: every failing configuration fails by its error alone, over the tolerance
  but within :data:`ENVELOPE` times what the reference itself makes with TF32 on (TF32 ``tl.dot``,
  approximate arithmetic of that size);
- otherwise the failure category itself.

The causes are not failure categories (the list of failure categories (docs/JUDGING.md) stays what it is: a consumer that knows
the categories keeps working) and not flags (a flag marks a *correct* result as untrusted): they
explain a rejection, in a column of their own.
"""
from __future__ import annotations

import math

PROTOCOLS = ("kbench", "kernelbench", "kernelbench-v0", "cuda-l1")
DEFAULT = "kbench"
KBENCH_TOLERANCE = {"fp32": 1e-4, "bf16": 1e-2, "fp16": 1e-2}
_LOOSE = {"fp32": 1e-2, "bf16": 1e-2, "fp16": 1e-2}
_TOLERANCES = {"kbench": KBENCH_TOLERANCE, "kernelbench": KBENCH_TOLERANCE, "kernelbench-v0": _LOOSE, "cuda-l1": _LOOSE}
_DEFAULT_ONLY = {"kernelbench", "kernelbench-v0"}
_EVAL_MODE = {"cuda-l1"}  # decided by the default configuration's eval configuration, timed in eval mode
DESCRIPTIONS = {
    "kbench": "every configuration in training mode (default, declared and derived variants); fp32 1e-4, fp16/bf16 1e-2",
    "kernelbench": "the declared shape only, training mode; fp32 1e-4, fp16/bf16 1e-2 (upstream KernelBench's current rule)",
    "kernelbench-v0": "the declared shape only, training mode; atol=rtol=1e-2 for every precision (upstream's first release)",
    "cuda-l1": "the declared shape only, eval mode under no_grad; atol=rtol=1e-2 for every precision (CUDA-L1's harness)",
}
# a failing configuration's error within this many times the reference's own error in reduced
# numerics is read as reduced precision, not as a wrong kernel: two TF32 GEMMs that sum in another
# order differ from fp32 by errors of the same size, not the same errors
ENVELOPE = 4.0
# the envelopes, narrowest first: the reference's own error with TF32 on, then under autocast to
# fp16 and to bf16 (kbench_lib.judging.tf32.NUMERICS), each a field of a configuration's result
ENVELOPES = (("ref_tf32_tol", "TF32"), ("ref_fp16_tol", "fp16 autocast"), ("ref_bf16_tol", "bf16 autocast"))
CAUSES = ("eval_mode_only", "shape_specialisation", "reduced_precision", "no_code")
NO_EVAL_RESULT = "the record holds no eval-mode result (judged before kbench checked modes): not read under cuda-l1"


class UnknownProtocol(ValueError):
    pass


def check(name: str | None) -> str:
    """``name`` when it is a protocol (None: the default), else :class:`UnknownProtocol` with a
    one-line message that lists the choices."""
    if name is None or name == "":
        return DEFAULT
    if name not in PROTOCOLS:
        raise UnknownProtocol(f"unknown protocol {name!r}: choose one of {', '.join(PROTOCOLS)}")
    return name


def tolerance(protocol: str, precision: str) -> float:
    """atol = rtol of ``protocol`` for ``precision``."""
    return _TOLERANCES[check(protocol)].get(precision, KBENCH_TOLERANCE["fp32"])


def loosest_tolerance(precision: str) -> float:
    """The largest tolerance any protocol allows for ``precision``: a default configuration whose
    error is within it may be correct under some protocol, so the judge times it."""
    return max(tolerance(p, precision) for p in PROTOCOLS)


def timed_mode(protocol: str | None) -> str:
    """The mode a judgement under ``protocol`` times the candidate and the baseline in: ``eval``
    under a protocol decided in eval mode, else ``train``."""
    return "eval" if check(protocol) in _EVAL_MODE else "train"


def may_pass(config: dict, precision: str) -> bool:
    """Whether ``config`` passes under some protocol (within the loosest tolerance): what the judge
    times, and re-checks with its guards, so that any protocol can read the run."""
    return config_passes(config, loosest_tolerance(precision))


def in_scope(protocol: str, config: dict) -> bool:
    """Whether ``config`` decides correctness under ``protocol`` (read :func:`scoped` for a
    judgement's configurations: under ``cuda-l1`` an eval configuration may stand in for another)."""
    p, kind = check(protocol), config.get("kind")
    if p in _EVAL_MODE:
        return kind == "eval"
    return kind != "eval" and (kind == "default" or p not in _DEFAULT_ONLY)


def scoped(protocol: str, configs: list[dict]) -> list[dict]:
    """The configurations that decide correctness under ``protocol``, as it reads them. Under
    ``cuda-l1``: the eval configuration; where it ``follows`` another (the reference does not depend
    on ``training``, or failed in eval mode), that one's result under the eval configuration's name;
    where the record has none (judged before modes existed), one not checked, saying why."""
    if check(protocol) not in _EVAL_MODE:
        return [c for c in configs if in_scope(protocol, c)]
    entry = next((c for c in configs if c.get("kind") == "eval"), None)
    if entry is None:
        default = next((c for c in configs if c.get("kind") == "default"), None)
        if default is None:
            return []
        return [{**default, "config": f"{default.get('config')}/eval", "kind": "eval", "checked": False, "passed": False,
                 "failure": None, "hard_failure": None, "tol_needed": None, "message": None, "reason": NO_EVAL_RESULT}]
    followed = entry.get("follows")
    if followed:
        source = next((c for c in configs if c.get("config") == followed), None)
        if source is not None:
            return [{**source, "config": entry.get("config"), "kind": "eval", "note": entry.get("reason")}]
    return [entry]


def config_passes(config: dict, tol: float) -> bool:
    t = config.get("tol_needed")
    return bool(config.get("checked")) and not config.get("hard_failure") and t is not None and _finite(t) and t <= tol


def config_failure(config: dict, tol: float) -> str | None:
    """The configuration's failure category at ``tol`` (None when it passes)."""
    if config_passes(config, tol):
        return None
    if not config.get("checked"):
        return "not_checked"
    return config.get("hard_failure") or "output_mismatch"


def config_state(config: dict) -> str:
    """A recorded configuration in one word, under its verdict's protocol: ``passed``, ``not
    checked`` or its failure category."""
    if config.get("passed"):
        return "passed"
    return "not checked" if not config.get("checked") else (config.get("failure") or "failed")


def envelope(config: dict) -> str | None:
    """The narrowest envelope (:data:`ENVELOPES`) that holds a failure by the size of the error
    alone: its name (``TF32``, ``fp16 autocast``, ``bf16 autocast``), or None."""
    t = config.get("tol_needed")
    if not (config.get("checked") and not config.get("hard_failure") and t is not None and _finite(t)):
        return None
    for field, name in ENVELOPES:
        ref = config.get(field)
        if ref is not None and _finite(ref) and ref > 0 and t <= ENVELOPE * ref:
            return name
    return None


def within_envelope(config: dict) -> bool:
    """A failure by the size of the error alone, within what the reference makes in reduced numerics."""
    return envelope(config) is not None


def decide(configs: list[dict], precision: str, protocol: str) -> dict:
    """``correct``, ``failure``, ``cause`` and ``message`` of a judgement's configurations under
    ``protocol``. ``failure`` is the first failing configuration's (the default's first), never a
    cause; ``message`` names that configuration. With no configuration at all: not correct.

    Causes, the first that applies: ``eval_mode_only`` (the declared shape fails in training mode
    and passes in eval mode, at the protocol's tolerance), ``reduced_precision`` (every failing
    configuration within an envelope), ``shape_specialisation`` (the declared shape passes, a
    variant fails), else the failure category."""
    tol = tolerance(protocol, precision)
    decided = scoped(protocol, configs)
    failing = [c for c in decided if not config_passes(c, tol)]
    default = next((c for c in decided if c.get("kind") in ("default", "eval")), None)
    if default is None:
        return {"correct": False, "failure": "crash", "cause": "crash", "message": "no result for the default configuration"}
    if not failing:
        return {"correct": True, "failure": None, "cause": None, "message": None}
    checked_failing = [c for c in failing if c.get("checked")]
    first = checked_failing[0] if checked_failing else failing[0]  # an unchecked one only ever follows a failed one
    failure = config_failure(first, tol)
    message = _message(first, tol)
    evald = next((c for c in configs if c.get("kind") == "eval" and not c.get("follows")), None)
    names = [envelope(c) for c in checked_failing]
    if default in failing and default.get("kind") == "default" and evald is not None and config_passes(evald, tol):
        cause = "eval_mode_only"
        message += f"; passes in eval mode ({evald.get('config')}): right only as the model computes in eval mode"
    elif checked_failing and all(names):
        cause = "reduced_precision"
        order = [n for _, n in ENVELOPES]
        widest = max(names, key=order.index)
        ref = first.get(ENVELOPES[order.index(names[0])][0])
        message += (f"; within {ENVELOPE:g}x the error the reference itself makes in {widest} "
                    f"({_g(ref) if len(set(names)) == 1 else 'per configuration'}): reduced precision")
    elif default not in failing:
        cause = "shape_specialisation"
        message += "; the declared shape passes: the kernel is specialised to it"
    else:
        cause = failure
    return {"correct": False, "failure": failure, "cause": cause, "message": message}


def _message(config: dict, tol: float) -> str:
    """What went wrong with one configuration at ``tol``, naming it."""
    name = config.get("config", "?")
    if not config.get("checked"):
        return f"[{name}] not checked: {config.get('reason') or 'no result'}"
    if config.get("hard_failure"):
        text = config.get("message") or config["hard_failure"]
        return text if text.startswith(f"[{name}") else f"[{name}] {text}"
    t = config.get("tol_needed")
    if config.get("message"):  # worded by the judge at the verdict's own tolerance
        return config["message"]
    return (f"[{name}] outputs outside atol=rtol={tol:g}: they need {_g(t)} "
            f"(max abs err {_g(config.get('max_abs_err'))})")


def _g(x) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


__all__ = ["CAUSES", "DEFAULT", "DESCRIPTIONS", "ENVELOPE", "ENVELOPES", "NO_EVAL_RESULT", "PROTOCOLS", "UnknownProtocol", "check",
           "config_failure", "config_passes", "config_state", "decide", "envelope", "in_scope", "loosest_tolerance", "may_pass",
           "scoped", "timed_mode", "tolerance", "within_envelope"]
