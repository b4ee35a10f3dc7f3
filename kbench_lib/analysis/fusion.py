"""What each judged candidate fused, from its profile and the reference's (records' ``profile_*``
and ``reference_*`` columns, :func:`kbench_lib.measure.profiling.profile_call`), set against what
torch.compile (Inductor) did for the same problem: the ``torch-compile`` model is judged like a
candidate, so its profile is in the records too.

The reference's *operators* are its lowest ATen compute ops, with their call counts. A candidate
that still runs one of them through ATen left it *in the library*; the rest ran inside its own
kernels (or were removed outright: a profile cannot tell fused from eliminated). On a GPU the
candidate's device kernels are split into its *own* (launched by no ATen op: hand-written, Triton or
Inductor-generated) and the library's (launched by an ATen op, or replayed from a CUDA graph under a
library kernel's name); operators per own kernel is the number of reference operator
calls it took over divided by its own kernel launches (KernelBench's Appendix L counts the same per
fused kernel). For torch.compile the operators of each generated kernel are also read from
Inductor's kernel names (``triton_poi_fused_add_mul_relu_0``: add, mul, relu).
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ..measure import profiling
from ..scoring import metrics
from .data import NoData, present
from .failures import outcome

COMPILE_MODEL = "torch-compile"
PROFILE_HINT = ("records written before the profile columns (profile_ops, reference_ops, *_kernels) have none: "
                "judge the candidates again with this version (guards on)")


def as_counts(value) -> dict:
    """A map column's value (list of pairs, dict, None or NaN) as {name: count}."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return {}
    if isinstance(value, dict):
        return {str(k): int(v) for k, v in value.items()}
    return {str(k): int(v) for k, v in value}


def as_kernels(value) -> list[dict] | None:
    """A kernels column's value as a list of dicts, None when no profile recorded kernels."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return [dict(k) for k in value]


def _short(op: str) -> str:
    return op.split("::", 1)[-1]


# one matrix product, whichever ATen form runs it: Inductor can unfuse a Linear's bias into its own
# epilogue kernel and call ``mm`` where the reference ran ``addmm``; that GEMM is still left to the
# library
GEMM_FORMS = frozenset({"aten::addmm", "aten::mm", "aten::matmul", "aten::linear", "aten::bmm", "aten::baddbmm",
                        "aten::_addmm_activation"})


def decisions(reference_ops: dict, candidate_ops: dict) -> dict:
    """For each reference operator, how many of its calls the candidate still ran through ATen
    (``in_library``: the same operator, or for a GEMM any of its forms in ``GEMM_FORMS``) and how many
    it took over (``replaced``); ``extra``: ATen compute ops the candidate ran that the reference does
    not (and no reference GEMM accounts for)."""
    left = dict(candidate_ops)
    in_lib: dict = {}
    for op, n in reference_ops.items():  # the same operator first
        k = min(left.get(op, 0), n)
        if k > 0:
            in_lib[op] = k
            left[op] -= k
    for op, n in reference_ops.items():  # then a GEMM the candidate ran in another form
        if op not in GEMM_FORMS:
            continue
        for other in sorted(o for o in left if o in GEMM_FORMS and left[o] > 0):
            k = min(left[other], n - in_lib.get(op, 0))
            if k > 0:
                in_lib[op] = in_lib.get(op, 0) + k
                left[other] -= k
    replaced = {op: n - in_lib.get(op, 0) for op, n in reference_ops.items() if n - in_lib.get(op, 0) > 0}
    extra = {op: n for op, n in left.items() if n > 0 and op not in reference_ops}
    return {"in_library": in_lib, "replaced": replaced, "extra": extra}


def _kernel_split(kernels: list[dict] | None, reference_kernels: list[dict] | None = None) -> tuple[float, float]:
    """(own, library) kernel launches; NaN without a recorded kernel list, 0 for an empty one. A
    kernel no ATen op launched is still the library's when the library's name is on it (a CUDA-graph
    replay of library calls: :func:`kbench_lib.measure.profiling.library_kernels`)."""
    if kernels is None:
        return math.nan, math.nan
    library = profiling.library_kernels(reference_kernels or [], kernels)
    own = sum(int(k.get("count") or 0) for k, lib in zip(kernels, library) if not lib)
    lib = sum(int(k.get("count") or 0) for k, lib in zip(kernels, library) if lib)
    return float(own), float(lib)


def fusion_row(row: dict) -> dict:
    """The fusion summary of one record row (a dict with record columns)."""
    ref, cand = as_counts(row.get("reference_ops")), as_counts(row.get("profile_ops"))
    d = decisions(ref, cand)
    # no kernel in the profile: 0, not unknown
    own, lib = _kernel_split(as_kernels(row.get("profile_kernels")), as_kernels(row.get("reference_kernels")))
    total = sum(ref.values())
    took = sum(d["replaced"].values())
    return {
        "reference_ops": total,
        "replaced_ops": took,
        "fused_share": took / total if total else math.nan,
        "replaced": ", ".join(f"{_short(o)}×{n}" if n > 1 else _short(o) for o, n in sorted(d["replaced"].items())),
        "in_library": ", ".join(f"{_short(o)}×{n}" if n > 1 else _short(o) for o, n in sorted(d["in_library"].items())),
        "extra": ", ".join(sorted(_short(o) for o in d["extra"])),
        "n_kernels": row.get("n_kernels"),
        "reference_n_kernels": row.get("reference_n_kernels"),
        "own_kernels": own,
        "library_kernels": lib,
        "ops_per_own_kernel": took / own if own and own > 0 else math.nan,
    }


KEYS = ["source", "run_id", "model", "level", "problem", "sample", "turn", "device_name", "small", "precision", "timestamp"]


def fusion_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per candidate whose record holds a profile, trusted or not: its keys, outcome,
    ``trusted`` (:func:`kbench_lib.scoring.metrics.trusted`; distributions over the table use only these),
    kernel speedup over eager, and :func:`fusion_row`. :class:`NoData` when no record has one."""
    if not present(df, "reference_ops"):
        raise NoData(f"no data for the fusion analysis: no record holds a profile ({PROFILE_HINT})")
    d = df[df["reference_ops"].notna()]
    keys = [k for k in KEYS if k in d]
    out = d[keys].copy()
    out["outcome"] = outcome(d).to_numpy()
    out["trusted"] = metrics.trusted(d).to_numpy()
    out["speedup_eager"] = metrics.kernel_speedup(d, "eager").to_numpy()
    summary = pd.DataFrame([fusion_row(r) for r in d.to_dict("records")], index=d.index)
    return pd.concat([out, summary], axis=1).reset_index(drop=True)


def against_compile(table: pd.DataFrame) -> pd.DataFrame:
    """Each candidate's fusion decisions beside torch.compile's for the same problem, device, size
    and precision: ``compile_replaced``, ``compile_in_library``, ``compile_n_kernels``,
    ``compile_ops_per_own_kernel``, and which operators only one of them took over. torch.compile's
    is its latest trusted record (by ``timestamp``) for that problem, device, size and precision."""
    keys = [k for k in ("problem", "device_name", "small", "precision") if k in table]
    comp = table[(table["model"] == COMPILE_MODEL) & (table["trusted"].astype(bool) if "trusted" in table else True)]
    if not len(comp):
        raise NoData("no data for the comparison with torch.compile: no trusted torch-compile record with a profile "
                     "(run `kbench run ... --model torch-compile`, or `make run`, which judges it)")
    if "timestamp" in comp:
        comp = comp.sort_values("timestamp", kind="stable", na_position="first")
    comp = comp.drop_duplicates(keys, keep="last").set_index(keys)[["replaced", "in_library", "n_kernels", "ops_per_own_kernel"]]
    comp.columns = [f"compile_{c}" for c in comp.columns]
    cand = table[table["model"] != COMPILE_MODEL].join(comp, on=keys)
    split = lambda s: {x.split("×")[0] for x in str(s).split(", ") if x and x != "nan"}  # noqa: E731
    cand["only_candidate_fused"] = [", ".join(sorted(split(a) - split(b))) for a, b in zip(cand["replaced"], cand["compile_replaced"])]
    cand["only_compile_fused"] = [", ".join(sorted(split(b) - split(a))) for a, b in zip(cand["replaced"], cand["compile_replaced"])]
    return cand.reset_index(drop=True)


_INDUCTOR = re.compile(r"^triton_(?:poi|red|per|tem|for|sch)_fused_(?P<ops>.+?)(?:_\d+)*$")


def inductor_kernel_ops(name: str, vocabulary=()) -> list[str] | None:
    """The operators in an Inductor kernel's name (``triton_per_fused__softmax_div_0`` ->
    ``['_softmax', 'div']``), None for a name that is not Inductor's. Names from ``vocabulary`` (op
    names such as ``native_layer_norm``) are matched whole, longest first; other parts are one op per
    underscore-separated word."""
    m = _INDUCTOR.match(name or "")
    if not m:
        return None
    words = [w for w in re.split(r"(?<=[a-z0-9])_(?=_?[a-z])", m.group("ops")) if w]
    vocab = sorted({_short(v) for v in vocabulary}, key=len, reverse=True)
    ops, i = [], 0
    while i < len(words):
        for v in vocab:
            parts = v.split("_") if not v.startswith("_") else ["_" + p if j == 0 else p for j, p in enumerate(v.lstrip("_").split("_"))]
            if words[i:i + len(parts)] == parts:
                ops.append(v)
                i += len(parts)
                break
        else:
            ops.append(words[i])
            i += 1
    return ops


def ops_per_kernel(df: pd.DataFrame) -> pd.DataFrame:
    """The distribution of operators per fused kernel, long form (model, problem, kernel, ops,
    how): Inductor's generated kernels from their names (``how="kernel name"``), every other
    candidate's own kernels on average (``how="replaced ops / own launches"``). GPU profiles of
    trusted candidates only (a wrong or flagged candidate's fusion is not one to count)."""
    rows = []
    if not present(df, "profile_kernels"):
        raise NoData(f"no data for operators per kernel: no record holds device kernels (a GPU profile; {PROFILE_HINT})")
    for r in df[df["profile_kernels"].notna() & metrics.trusted(df)].to_dict("records"):
        kernels = as_kernels(r["profile_kernels"]) or []
        if r.get("model") == COMPILE_MODEL:
            vocab = list(as_counts(r.get("reference_ops")))
            for k in kernels:
                ops = inductor_kernel_ops(k["name"], vocab)
                if ops is not None:
                    rows.append({"model": r["model"], "problem": r["problem"], "kernel": k["name"], "ops": len(ops), "how": "kernel name"})
        else:
            f = fusion_row(r)
            if np.isfinite(f["ops_per_own_kernel"]):
                rows.append({"model": r["model"], "problem": r["problem"], "kernel": "(own kernels)", "ops": f["ops_per_own_kernel"],
                             "how": "replaced ops / own launches"})
    if not rows:
        raise NoData("no data for operators per kernel: no trusted candidate's profile recorded a device kernel of its own "
                     "(CPU runs launch none)")
    return pd.DataFrame(rows)


def slower_than_eager(df: pd.DataFrame) -> pd.DataFrame:
    """Trusted, kernel-timed candidates slower than eager PyTorch, slowest first, with their fusion
    decisions where the record holds a profile (kernel counts and own-kernel share otherwise)."""
    ok = metrics.trusted(df) & metrics.kernel_timed(df)
    speed = metrics.kernel_speedup(df, "eager")
    slow = df[ok & (speed < 1.0)].assign(speedup_eager=speed[ok & (speed < 1.0)])
    if not metrics.kernel_timed(df).any():
        raise NoData("no data for slower-than-eager candidates: no kernel timings (a run without a GPU times no kernel)")
    cols = ["model", "problem", "sample", "backend", "speedup_eager", "n_kernels", "custom_kernel_share"]
    out = slow[[c for c in cols if c in slow]].copy()
    if present(slow, "reference_ops"):
        f = pd.DataFrame([fusion_row(r) if r.get("reference_ops") is not None else {} for r in slow.to_dict("records")], index=slow.index)
        out = out.join(f[["reference_n_kernels", "own_kernels", "replaced", "in_library", "fused_share"]])
    return out.sort_values("speedup_eager").reset_index(drop=True)


def kernel_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Kernels launched per candidate (GPU records), against the reference's where recorded, with the
    share of device time in the candidate's own kernels."""
    if not present(df, "n_kernels"):
        raise NoData("no data for kernel counts: no record counts device kernels (GPU runs only)")
    d = df[df["n_kernels"].notna()]
    cols = ["source", "model", "level", "problem", "sample", "backend", "n_kernels", "reference_n_kernels", "custom_kernel_share"]
    out = d[[c for c in cols if c in d]].copy()
    out["outcome"] = outcome(d).to_numpy()
    return out.reset_index(drop=True)
