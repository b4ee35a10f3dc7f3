"""Judge feedback in words: what a refinement or evolution prompt tells the model about a candidate.

KernelBench compares refinement with execution feedback alone (did it compile, was it correct,
how fast) against execution plus a profile (which kernels ran and how long); :class:`FeedbackOptions`
switches each block, and :data:`PRESETS` names the two (``execution``, ``profile``) and ``none``.
The text is built from an observation (:mod:`.observations`), never from the candidate's own
claims about itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields

from ..scoring.metrics import TIMING_KINDS


@dataclass(frozen=True)
class FeedbackOptions:
    compile_log: bool = True  # the compiler's or the run's log, trimmed to its error lines
    failure: bool = True  # failure category and message
    worst_error: bool = True  # largest absolute error against the reference
    verdict: bool = True  # correct / failed / flagged, in one line
    speed: bool = True  # runtime, baseline, speedups, fraction of the speed of light
    flags: bool = True  # why a correct result is not trusted
    profile: bool = True  # heaviest kernels and their share of device time, kernel count, own-kernel share
    log_chars: int = 1500

    @classmethod
    def from_value(cls, value) -> "FeedbackOptions":
        """Options from None (all on), a preset name, an instance, or a dict of fields."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return PRESETS[value]
            except KeyError:
                raise ValueError(f"feedback must be one of {sorted(PRESETS)} or a dict of {[f.name for f in fields(cls)]}") from None
        return cls(**dict(value))


PRESETS = {
    "profile": FeedbackOptions(),
    "execution": FeedbackOptions(profile=False),
    "none": FeedbackOptions(compile_log=False, failure=False, worst_error=False, verdict=False, speed=False, flags=False, profile=False),
}

_ERROR_LINE = re.compile(r"error|Error|ERROR|undefined|expected|cannot|invalid|Traceback|Exception|^\s*File ")


def trim_log(log: str | None, limit: int) -> str:
    """The lines of ``log`` that say what went wrong (errors and their next line), at most ``limit``
    characters; the tail of the log when no line looks like an error."""
    if not log:
        return ""
    lines = log.splitlines()
    keep: list[str] = []
    for i, line in enumerate(lines):
        if _ERROR_LINE.search(line):
            keep += [line] + lines[i + 1:i + 2]
    text = "\n".join(dict.fromkeys(keep)) if keep else "\n".join(lines[-30:])
    return text if len(text) <= limit else text[: limit - 20] + "\n[... log cut ...]"


def _timing_kind(obs: dict) -> str:
    device, small = str(obs.get("device") or ""), bool(obs.get("small"))
    if device.startswith("cuda"):
        return "gpu_small" if small else "gpu"
    return "triton_interpreter" if obs.get("backend") == "triton" else "cpu"


def verdict_line(obs: dict) -> str:
    if not obs.get("judged", True):
        return "Verdict: not run (a verifier predicted it would fail)."
    if obs.get("failure"):
        return f"Verdict: FAILED ({obs['failure']})."
    if obs.get("flags"):
        return "Verdict: correct outputs but FLAGGED, so it does not count."
    return "Verdict: correct."


def speed_lines(obs: dict) -> list[str]:
    if obs.get("runtime_ms") is None:
        return []
    kind = _timing_kind(obs)
    lines = [f"Runtime {obs['runtime_ms']:.4g} ms against {obs.get('baseline_eager_ms') or float('nan'):.4g} ms for eager PyTorch "
             f"(speedup {obs.get('speedup_eager') or float('nan'):.3g}x; timed by {TIMING_KINDS[kind]})."]
    if obs.get("speedup_compile"):
        lines.append(f"Speedup over torch.compile: {obs['speedup_compile']:.3g}x.")
    if obs.get("sol_ms") and kind == "gpu":
        lines.append(f"Speed of light (roofline bound) {obs['sol_ms']:.4g} ms: this candidate runs at "
                     f"{obs['sol_ms'] / obs['runtime_ms']:.1%} of it.")
    return lines


def profile_lines(obs: dict) -> list[str]:
    kernels = obs.get("top_kernels") or []
    if obs.get("n_kernels") is None and not kernels:
        return ["Profile: no device-kernel profile (not run on a GPU)."] if obs.get("runtime_ms") is not None else []
    lines = [f"Profile of one forward call: {obs.get('n_kernels')} device kernels"
             + (f", {obs['custom_kernel_share']:.0%} of device time in the candidate's own kernels" if obs.get("custom_kernel_share") is not None else "")
             + "."]
    lines += [f"  {share:.1%}  {name}" for name, share in kernels]
    return lines


def feedback_text(obs: dict, options: "FeedbackOptions | str | dict | None" = None) -> str:
    """What the judge saw of one candidate, in the blocks ``options`` switches on."""
    o = FeedbackOptions.from_value(options)
    out: list[str] = []
    if o.verdict:
        out.append(verdict_line(obs))
    if o.failure and (obs.get("failure") or not obs.get("judged", True)):
        out.append(f"Failure: {obs.get('failure')}: {(obs.get('message') or '').strip()[: o.log_chars]}")
    if o.compile_log and obs.get("failure") in ("compile_error", "load_error"):
        log = trim_log(obs.get("error"), o.log_chars)
        if log:
            out.append("Log (error lines):\n" + log)
    if o.worst_error and obs.get("max_abs_err") is not None:
        out.append(f"Largest absolute error against the reference: {obs['max_abs_err']:.3g}.")
    if o.flags and obs.get("flags"):
        out.append("Flags: " + "; ".join(str(f) for f in obs["flags"]))
    if o.speed:
        out += speed_lines(obs)
    if o.profile:
        out += profile_lines(obs)
    return "\n".join(out) if out else "(no feedback)"
