"""Does preparing a reference with each configuration's model built once give exactly what building
it anew for every case gave? (kbench_lib.judging.reference_models.ReferenceModels.)

For each problem of the suite, its reference side is prepared twice with the same seeds: as the
judge does (one model per configuration and init seed, its parameters and buffers restored before
each case), and with a fresh model for every case (as before). Every case's expected outputs and
gradients must be bitwise equal, and so must the fingerprints of its inputs and of the model's
state. Prints one JSON line per problem that differs or fails, then a summary with the time each
way took.

    python3 benchmarks/prepare_parity.py                 # every problem, small shapes, on the CPU
    python3 benchmarks/prepare_parity.py --device cuda --full --match level2/10
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from kbench_lib.judging import prepared as prepared_module  # noqa: E402
from kbench_lib.judging.reference_models import ReferenceModels  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions  # noqa: E402
from kbench_lib.suite.problems import discover  # noqa: E402


def _fresh(self, config, init_seed):
    """The former way: no model handed to the case, so it builds its own."""
    return None


def prepare_both(problem, device: str, small: bool, seed: int = 1234):
    """(as the judge prepares it, with a fresh model per case, seconds each way)."""
    opts = JudgeOptions(device=device, seed=seed)
    t0 = time.monotonic()
    shared = prepared_module.prepare(problem, device, opts, small, seed)
    t1 = time.monotonic()
    real = ReferenceModels.get
    ReferenceModels.get = _fresh
    try:
        fresh = prepared_module.prepare(problem, device, opts, small, seed)
    finally:
        ReferenceModels.get = real
    return shared, fresh, t1 - t0, time.monotonic() - t1


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.device.type == "meta" or b.device.type == "meta":
            return a.device.type == b.device.type
        return bool(torch.equal(a.cpu(), b.cpu())) or bool(torch.equal(a.cpu().isnan(), b.cpu().isnan()) and torch.equal(
            a.cpu().nan_to_num(), b.cpu().nan_to_num()))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def differences(shared, fresh) -> list[str]:
    """What differs between two preparations of the same problem and seeds, case by case."""
    out = []
    if len(shared.cases) != len(fresh.cases):
        return [f"{len(shared.cases)} cases against {len(fresh.cases)}"]
    for i, (a, b) in enumerate(zip(shared.cases, fresh.cases)):
        for name in ("config", "init_seed", "input_seed", "init_inputs", "inputs", "grad_output", "expected",
                     "expected_input_grads", "expected_param_grads", "state_sums"):
            if not _same(getattr(a, name), getattr(b, name)):
                out.append(f"case {i} ({a.config}): {name}")
    # the timed configuration's model handed on by the cases (ReferenceModels.kept) against one built anew
    kept = shared._model
    if kept is not None and not _same(dict(kept.state_dict()), dict(fresh.reference_model().state_dict())):
        out.append("the timed configuration's model (parameters and buffers)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--full", action="store_true", help="full shapes (default: the problems' SMALL shapes)")
    ap.add_argument("--match", default="", help="only problems whose key contains this")
    a = ap.parse_args()
    problems = [p for p in discover(REPO / "problems") if a.match in p.key]
    totals = {"problems": 0, "differ": 0, "failed": 0, "shared_s": 0.0, "fresh_s": 0.0}
    for p in problems:
        totals["problems"] += 1
        try:
            shared, fresh, ts, tf = prepare_both(p, a.device, not a.full)
        except Exception as e:  # noqa: BLE001 - a problem that cannot be prepared either way is reported, the rest go on
            totals["failed"] += 1
            print(json.dumps({"problem": p.key, "failed": f"{type(e).__name__}: {str(e)[:300]}"}), flush=True)
            continue
        totals["shared_s"] += ts
        totals["fresh_s"] += tf
        diff = differences(shared, fresh)
        if diff:
            totals["differ"] += 1
            print(json.dumps({"problem": p.key, "differ": diff[:10]}), flush=True)
        shared.release()
        fresh.release()
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in totals.items()}), flush=True)


if __name__ == "__main__":
    main()
