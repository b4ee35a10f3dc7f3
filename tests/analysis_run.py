"""A small real run on the CPU for the analysis notebooks' and explorer's tests: the judge's verdicts
on fixture problems for a mix of candidates (correct, wrong, crashing, not compiling, flagged) and
torch.compile, written by the runner exactly as ``make run`` writes its records."""
from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
ADVERSARIAL = Path(__file__).parent / "adversarial"
PROBLEMS = [FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py", FIXTURES / "problems" / "level1" / "2_Linear_GELU.py"]
# (problem stem, sample name, candidate file)
CANDIDATES = [
    ("1_Scale_Add_ReLU", "triton", FIXTURES / "candidates" / "scale_add_relu_triton.py"),
    ("1_Scale_Add_ReLU", "wrong", FIXTURES / "candidates" / "scale_add_relu_wrong.py"),
    ("1_Scale_Add_ReLU", "raises", FIXTURES / "bad_candidates" / "raises.py"),
    ("1_Scale_Add_ReLU", "nan", FIXTURES / "bad_candidates" / "nan_output.py"),
    ("1_Scale_Add_ReLU", "shape", FIXTURES / "bad_candidates" / "wrong_shape.py"),
    ("1_Scale_Add_ReLU", "syntax", FIXTURES / "bad_candidates" / "syntax_error.py"),
    ("1_Scale_Add_ReLU", "compile", FIXTURES / "bad_candidates" / "compile_error_cpp.py"),
    ("1_Scale_Add_ReLU", "threads", ADVERSARIAL / "cheats" / "12a_thread_work_threading.py"),
    ("2_Linear_GELU", "fallback", ADVERSARIAL / "cheats" / "02_fallback.py"),
]


def make_cpu_run(runs_root: Path, run_id: str = "cpu-analysis", with_compile: bool = True) -> str:
    """Judges the candidates above (model ``folder:...``) and, with ``with_compile``, torch.compile
    (model ``torch-compile``) on the CPU at SMALL size; returns the run id."""
    from kbench_lib.judging.pipeline import JudgeOptions
    from kbench_lib.suite.problems import load_problem
    from kbench_lib.batch.runner import run_batch

    folder = Path(runs_root) / "_candidates" / "level1"
    folder.mkdir(parents=True, exist_ok=True)
    for stem, name, src in CANDIDATES:
        shutil.copy(src, folder / f"{stem}__{name}.py")
    problems = [load_problem(p) for p in PROBLEMS]
    opts = JudgeOptions(device="cpu", small=True, timing_budget_s=0.2, min_trials=10, max_trials=50, warmup_ms=1.0, run_timeout_s=120)
    run_batch(problems, f"folder:{folder.parent}", run_id=run_id, runs_root=runs_root, opts=opts, progress=False)
    if with_compile:
        run_batch(problems, "torch-compile", run_id=run_id, runs_root=runs_root, opts=opts, progress=False)
    return run_id
