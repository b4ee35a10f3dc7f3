"""Comparing a candidate's outputs with the reference's, element by element, in the judge's process.

Pure functions over CPU tensors (the arithmetic may run on the judge's GPU). Every element is compared (threat #4, #18); the candidate's values
arrive as plain tensors deserialised with ``weights_only=True`` and are re-checked to be exactly
``torch.Tensor`` (threat #13).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Mismatch:
    failure: str  # a failure category (docs/JUDGING.md)
    message: str
    max_abs_err: float | None = None


def _plain(t) -> bool:
    return type(t) is torch.Tensor and not t.is_meta and t.layout == torch.strided


def _together(ref: torch.Tensor, got: torch.Tensor, device: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``ref`` and ``got`` on one device for the arithmetic: ``device`` (the judge's GPU) for large
    tensors or when they sit apart, else where the reference's copy is."""
    if device is not None and (ref.numel() >= (1 << 16) or ref.device != got.device):
        return ref.to(device), got.to(device)
    return ref, got.to(ref.device) if got.device != ref.device else got


@dataclass(frozen=True)
class Measure:
    """One output compared, whatever the tolerance: ``hard`` is a failure no tolerance removes
    (type, shape, dtype, non-finite values where the reference is finite, integers that differ);
    ``tol_needed`` the smallest t for which ``allclose(got, expected, atol=t, rtol=t)`` passes
    (max |got - expected| / (1 + |expected|) over the finite elements; inf where the non-finite
    elements differ; None with a hard failure); ``bound`` that ratio per element (for counting the
    elements over a tolerance), or None."""

    hard: Mismatch | None
    max_abs_err: float | None
    tol_needed: float | None
    bound: torch.Tensor | None = None

    def mismatch(self, tol: float, what: str) -> Mismatch | None:
        """The mismatch at ``tol`` (the hard one, else the elements outside the tolerance)."""
        if self.hard is not None:
            return self.hard
        if self.tol_needed is None or self.tol_needed <= tol:
            return None
        n_bad = int((self.bound > tol).sum()) if self.bound is not None else 0
        n = self.bound.numel() if self.bound is not None else 0
        if n_bad == 0:  # only the positions of the reference's own non-finite values differ
            return Mismatch("output_mismatch", f"{what}: non-finite values differ from the reference's", self.max_abs_err)
        return Mismatch("output_mismatch",
                        f"{what}: {n_bad} of {n} elements outside atol=rtol={tol:g} (max abs err {self.max_abs_err:.3g})",
                        self.max_abs_err)


def measure_tensor(expected, got, what: str = "output", device: str | None = None) -> Measure:
    """:class:`Measure` of one output. ``expected`` may also be a non-tensor value. ``device``:
    where the arithmetic runs (the judge's GPU: full-size outputs in float64 take seconds on a
    CPU); the tensors are checked to be plain before they are moved."""
    if not isinstance(expected, torch.Tensor):
        if isinstance(got, torch.Tensor) or got != expected:
            return Measure(Mismatch("output_mismatch", f"{what}: expected {expected!r}, got {got!r}"), None, None)
        return Measure(None, 0.0, 0.0)
    if not _plain(got):
        return Measure(Mismatch("output_mismatch", f"{what}: expected a plain torch.Tensor, got {type(got).__name__}"), None, None)
    if tuple(got.shape) != tuple(expected.shape):
        return Measure(Mismatch("shape_mismatch", f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"), None, None)
    if got.dtype != expected.dtype:
        return Measure(Mismatch("dtype_mismatch", f"{what}: expected dtype {expected.dtype}, got {got.dtype}"), None, None)
    expected, got = _together(expected, got, device)
    if not expected.is_floating_point() and not expected.is_complex():
        n_bad = int((got != expected).sum())
        err = float((got.double() - expected.double()).abs().max()) if got.numel() else 0.0
        if n_bad:
            return Measure(Mismatch("output_mismatch", f"{what}: {n_bad} of {got.numel()} elements differ", err), err, None)
        return Measure(None, err, 0.0)
    e64, g64 = expected.double(), got.double()
    exp_finite = torch.isfinite(e64)
    got_finite = torch.isfinite(g64)
    if bool((exp_finite & ~got_finite).any()):
        n = int((exp_finite & ~got_finite).sum())
        return Measure(Mismatch("nonfinite", f"{what}: {n} non-finite values where the reference is finite", float("inf")),
                       float("inf"), None)
    # where the reference itself is non-finite, the candidate must match it exactly (nan == nan)
    same_nonfinite = torch.equal(e64[~exp_finite].nan_to_num(1.0, 2.0, -2.0), g64[~exp_finite].nan_to_num(1.0, 2.0, -2.0))
    diff = (g64 - e64).abs()
    diff = torch.where(exp_finite, diff, torch.zeros_like(diff))
    max_err = float(diff.max()) if diff.numel() else 0.0
    bound = diff / (1.0 + e64.abs().where(exp_finite, torch.zeros_like(e64)))
    tol_needed = float(bound.max()) if bound.numel() else 0.0
    return Measure(None, max_err, tol_needed if same_nonfinite else float("inf"), bound)


def compare_tensor(expected, got, tol: float, what: str = "output", device: str | None = None) -> tuple[Mismatch | None, float | None]:
    """(mismatch at ``tol`` or None, max absolute error): :func:`measure_tensor` read at one tolerance."""
    m = measure_tensor(expected, got, what, device)
    return m.mismatch(tol, what), m.max_abs_err


@dataclass(frozen=True)
class OutputsMeasure:
    """Several outputs compared, whatever the tolerance: the first hard failure (or None), the
    largest absolute error and the largest ``tol_needed`` over everything compared, and the first
    output's mismatch at a tolerance (:meth:`mismatch`)."""

    hard: Mismatch | None
    max_abs_err: float
    tol_needed: float | None
    parts: tuple = ()  # (name, Measure) of each output, in order

    def mismatch(self, tol: float) -> Mismatch | None:
        if self.hard is not None:
            return self.hard
        for name, m in self.parts:
            found = m.mismatch(tol, name)
            if found is not None:
                return found
        return None


def measure_outputs(expected: list, got: list, what: str = "output", device: str | None = None) -> OutputsMeasure:
    """:class:`OutputsMeasure` of lists of outputs. Every output is measured, also after a hard
    failure of one (the worst error is over all of them)."""
    if not isinstance(got, list) or len(got) != len(expected):
        n = len(got) if isinstance(got, list) else type(got).__name__
        return OutputsMeasure(Mismatch("shape_mismatch", f"{what}: expected {len(expected)} output(s), got {n}"), float("nan"), None)
    worst, need, hard, parts = 0.0, 0.0, None, []
    for i, (e, g) in enumerate(zip(expected, got)):
        name = what if len(expected) == 1 else f"{what}[{i}]"
        m = measure_tensor(e, g, name, device)
        parts.append((name, Measure(m.hard, m.max_abs_err, m.tol_needed, m.bound)))
        if m.max_abs_err is not None:
            worst = max(worst, m.max_abs_err)
        if m.hard is not None and hard is None:
            hard = m.hard
        need = None if need is None or m.tol_needed is None else max(need, m.tol_needed)
    return OutputsMeasure(hard, worst, None if hard is not None else need, tuple(parts))


def compare_outputs(expected: list, got: list, tol: float, what: str = "output", device: str | None = None) -> tuple[Mismatch | None, float]:
    """Compare lists of outputs; the first mismatch wins, max error is over everything compared."""
    m = measure_outputs(expected, got, what, device)
    found = m.mismatch(tol)
    if found is not None and found.max_abs_err is not None:
        return found, found.max_abs_err
    return found, m.max_abs_err


_INT_OF_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_FP_CHUNK = 1 << 24


def fingerprint(t: torch.Tensor) -> dict:
    """A bit-level summary of a tensor, computed where it lives, exact on every device: its shape,
    dtype, and two sums over its bits read as integers (one plain, one weighted by a hash of each
    element's position; integer sums wrap modulo 2**64, so the order of summation cannot change
    them). The worker returns fingerprints of the inputs after the calls instead of the inputs
    themselves: the same check as comparing every element bit for bit (a change that keeps both
    sums is one a candidate would have to construct, and one that could as well return a copy of
    the untouched input), without shipping every input back through the CPU."""
    x = t.detach()
    if x.is_complex():
        x = torch.view_as_real(x)
    x = x.contiguous().reshape(-1)
    if x.dtype == torch.bool:
        x = x.view(torch.uint8)
    x = x.view(_INT_OF_WIDTH[x.element_size()])
    plain = torch.zeros((), dtype=torch.int64, device=x.device)
    weighted = torch.zeros((), dtype=torch.int64, device=x.device)
    for start in range(0, x.numel(), _FP_CHUNK):
        chunk = x[start:start + _FP_CHUNK].to(torch.int64)
        pos = torch.arange(start, start + chunk.numel(), dtype=torch.int64, device=x.device)
        weights = (pos * 2654435761 + 40503) & 0x7FFFFFFF
        plain += chunk.sum()
        weighted += (chunk * weights).sum()
    return {"shape": tuple(t.shape), "dtype": str(t.dtype), "sums": (int(plain), int(weighted))}


def is_fingerprint(x) -> bool:
    return isinstance(x, dict) and set(x) == {"shape", "dtype", "sums"}


def unchanged(before: list, after: list, device: str | None = None) -> str | None:
    """None when every input is bit-identical after the call; else which one changed (threat #5).
    ``before`` holds the inputs or their fingerprints; ``after`` the inputs after the call, or
    their :func:`fingerprint`."""
    if not isinstance(after, list) or len(before) != len(after):
        return "the number of inputs changed"
    for i, (b, a) in enumerate(zip(before, after)):
        if is_fingerprint(b):  # the judge keeps fingerprints of the inputs it drew, not the inputs
            if not is_fingerprint(a) or tuple(a["shape"]) != tuple(b["shape"]) or a["dtype"] != b["dtype"]:
                return f"input {i} was replaced"
            if tuple(a["sums"]) != tuple(b["sums"]):
                return f"input {i} was modified in place"
            continue
        if isinstance(b, torch.Tensor):
            if is_fingerprint(a):
                if device is not None and b.numel() >= (1 << 16):
                    b = b.to(device)
                if tuple(a["shape"]) != tuple(b.shape) or a["dtype"] != str(b.dtype):
                    return f"input {i} was replaced"
                if tuple(a["sums"]) != fingerprint(b)["sums"]:
                    return f"input {i} was modified in place"
                continue
            if not _plain(a) or a.shape != b.shape or a.dtype != b.dtype:
                return f"input {i} was replaced"
            b, a = _together(b, a, device)
            if not torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)) or not torch.equal(a.isnan(), b.isnan()):
                return f"input {i} was modified in place"
    return None
