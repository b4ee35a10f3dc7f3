"""The source texts behind a record: the problem (reference) and the candidate judged.

Records since the explorer's columns carry ``candidate_source`` and ``problem_path``. Older ones
(the committed H100 records) are resolved here: the problem from ``problems/<key>.py``; the
candidate, for the offline models, from where that model takes it (the hand-written solutions, a
folder, or torch.compile's generated wrapper) and accepted only if its content hash is the
record's ``kernel_sha``. Anything else is reported as not available, never guessed.
"""
from __future__ import annotations

from pathlib import Path

from ..generation.models import SOLUTIONS, compile_source, folder_model
from ..suite.problems import load_problem

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"


def _text(v) -> str | None:
    return v if isinstance(v, str) and v else None


def problem_file(row: dict) -> Path | None:
    """The problem file of a record: ``problem_path`` when it still exists, else the repository's."""
    for p in (_text(row.get("problem_path")), str(PROBLEMS / f"{row.get('problem')}.py")):
        if p and Path(p).is_file():
            return Path(p)
    return None


def reference_source(row: dict) -> str | None:
    path = problem_file(row)
    return path.read_text() if path else None


def candidate_source(row: dict) -> str | None:
    """The candidate's source: from the record, else re-derived for offline models and checked
    against ``kernel_sha``; None when it cannot be found."""
    src = _text(row.get("candidate_source"))
    if src:
        return src
    path, model, sha = problem_file(row), str(row.get("model") or ""), _text(row.get("kernel_sha"))
    if path is None or not sha:
        return None
    try:
        problem = load_problem(path)
        if model == "torch-compile":
            options = [compile_source(problem)]
        elif model == "reference" or model.startswith("folder:"):
            root = SOLUTIONS if model == "reference" else Path(model.split(":", 1)[1])
            options = [s.candidate.source for s in folder_model(root)(problem) if s.candidate is not None]
        else:
            return None
    except Exception:  # noqa: BLE001 - an unreadable problem or folder means: not available
        return None
    from ..core.candidates import detect_backend
    from hashlib import sha256

    for text in options:
        backend = row.get("backend") or detect_backend(text)
        if sha256(f"{backend}\0{text}".encode()).hexdigest()[: len(sha)] == sha:
            return text
    return None
