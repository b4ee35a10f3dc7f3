"""Whether a problem's reference depends on ``training``: the judge's side of the mode dimension.

KernelBench builds both models in training mode; CUDA-L1's harness switched both to eval mode
(``model.eval()``) and ran them under ``torch.no_grad()``. The two agree wherever the reference's
output does not depend on ``training``. Where it does (BatchNorm normalises by the batch's
statistics in training mode and by its running statistics in eval mode; Dropout drops only in
training mode), a kernel can be right under one rule and wrong under the other: one that moves a
BatchNorm after a global average pool is right in eval mode (running statistics commute with the
pool) and wrong in training mode.

:func:`compare` reads the reference's outputs of both modes on one input set (the default
configuration's first, from one model in the same state), once per prepared problem, in the
judge's process (:func:`kbench_lib.judging.prepared.prepare`). Where the outputs differ the candidate is also checked in eval mode on the
declared shape (the configuration ``default/eval``, :func:`kbench_lib.suite.problems.eval_config`,
on the same seeds as the default's checked sets). The result travels with every verdict as the eval
configuration's entry (:func:`eval_entry`), so that any protocol can read a record without judging
again: ``cuda-l1`` reads the eval configuration where it was checked, the default configuration
where the reference does not depend on ``training``, and says so where neither is known.

Forward calls run under ``torch.no_grad()`` in every configuration, on both sides (the judge's
rule before modes existed), so ``no_grad`` is not a dimension of its own; a backward task needs
gradients, and is judged in training mode only.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..measure.compare import measure_outputs

# the outputs of the two modes differ when they need a tolerance over this: kernels that sum with
# atomics can differ between two runs of one mode by a few ulps, far under it; a BatchNorm's batch
# statistics differ from its running ones by far more
DEPENDS_TOL = 1e-6
INDEPENDENT = "the reference's output does not depend on training (same outputs in eval mode on one input set): the default configuration stands for it"
BACKWARD = "a backward task needs gradients: judged in training mode only"
NOT_PLANNED = "no eval-mode set was planned (no checked input set of the default configuration)"


@dataclass(frozen=True)
class ModeProbe:
    """What :func:`compare` found (or why it was not asked): ``dependent`` (True: the eval configuration is checked), the
    outputs' difference (``tol_needed`` of eval against train, None where none was compared) and
    ``reason`` (why the eval configuration is not checked, None when it is)."""

    dependent: bool
    difference: float | None = None
    reason: str | None = None


def compare(train: list, evald: list, device: str) -> ModeProbe:
    """Whether the reference's outputs on one input set in training mode (``train``) and in eval
    mode (``evald``), from one model in the same state, differ."""
    cmp_dev = device if str(device).startswith("cuda") else None
    m = measure_outputs(train, evald, device=cmp_dev)
    if m.hard is not None:  # other shapes, dtypes or non-finite values: the modes differ
        return ModeProbe(True, None)
    if m.tol_needed is not None and m.tol_needed > DEPENDS_TOL:
        return ModeProbe(True, float(m.tol_needed))
    return ModeProbe(False, None if m.tol_needed is None else float(m.tol_needed), INDEPENDENT)


def raised(e: BaseException) -> ModeProbe:
    """The reference raised in eval mode: judged in training mode only, with the reason."""
    return ModeProbe(False, None, f"the reference raised in eval mode under no_grad ({type(e).__name__}: {str(e)[:200]}): "
                                  "judged in training mode only")


__all__ = ["BACKWARD", "DEPENDS_TOL", "INDEPENDENT", "NOT_PLANNED", "ModeProbe", "compare", "raised"]
