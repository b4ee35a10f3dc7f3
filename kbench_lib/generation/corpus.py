"""Published kernel corpora as models: each row a task (its own reference source), a kernel (or
none) and the speedup its authors claimed, judged against that task as the corpus evaluated it.

``--model cuda-l1:PATH`` reads CUDA-L1's release format (one JSON object per line: ``level_id``,
``task_id``, ``ref_code``, ``custom_code``, ``score_default``; ``custom_code`` null or ``"None"``
where a row publishes no kernel). :func:`read` reads a file into :class:`CorpusRow` s;
each row's reference source as a problem file (:func:`corpus_problems`: the corpus's task, which may
differ from today's file of the same benchmark); :func:`corpus_model` hands each problem its row's
kernel. The claim travels in the sample's ``meta`` into the record: ``claim_speedup``,
``claim_source`` (``cuda-l1:<file stem>``, e.g. ``cuda-l1:h100``) and ``claim_baseline``.

Bad input never stops a batch: a line that is not a JSON object, or lacks its task, becomes a
problem of its own whose sample fails with ``generation_error`` and the line's number; a row
without code is a sample with failure ``no_code``; a reference that does not run is the judge's
``judge_error`` for that row; a kernel that does not load is the judge's ``load_error``. An unknown
format or a missing file is a :class:`CorpusError` with a one-line message.

Corpus rows are third-party code: the kernels are untrusted candidates like any other (judged in
the sandbox), and the reference sources are executed in the judge's process as problem files are.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..core.candidates import Candidate, detect_backend
from .samples import Sample
from ..suite.problems import Problem, ProblemError, load_problem

FORMATS = ("cuda-l1",)


class CorpusError(ValueError):
    """The corpus cannot be read at all (an unknown format, a missing file): one line."""


@dataclass(frozen=True)
class CorpusRow:
    """One row of a corpus: where it came from (``row_id``: file and line), its task (``level``,
    ``task_id``, ``ref_code``), its kernel (``code``; None where it publishes none), the claim, and
    ``error`` where the line itself is malformed."""

    corpus: str
    row_id: str
    line: int
    level: int | None = None
    task_id: int | None = None
    ref_code: str | None = None
    code: str | None = None
    claims: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def stem(self) -> str:
        """The problem file's stem: ``<task_id>_<words of the task>`` (``line<N>`` for a malformed row)."""
        if self.error or self.task_id is None:
            return f"line{self.line}_malformed"
        return f"{self.task_id}_{task_words(self.ref_code or '')}"

    @property
    def level_name(self) -> str:
        return f"level{self.level}" if self.level is not None else "malformed"


def is_corpus(spec: str) -> bool:
    """Whether a ``--model`` spec names a corpus (``<format>:PATH``)."""
    return spec.split(":", 1)[0] in FORMATS and ":" in spec


def spec_error(spec: str) -> str | None:
    """Why the corpus spec ``<format>:PATH`` cannot be read (one line: an unknown format, no such
    file), or None; the file itself is not read."""
    fmt, _, path = spec.partition(":")
    if fmt not in FORMATS:
        return f"unknown corpus format {fmt!r}: choose one of {', '.join(FORMATS)}"
    if not Path(path).expanduser().is_file():
        return f"{fmt} corpus {path!r}: no such file"
    return None


def read(spec: str) -> list[CorpusRow]:
    """The rows of the corpus ``<format>:PATH``."""
    why = spec_error(spec)
    if why:
        raise CorpusError(why)
    return read_cuda_l1(Path(spec.partition(":")[2]).expanduser())


def read_cuda_l1(path: Path) -> list[CorpusRow]:
    """CUDA-L1's release format, one row per line (module docstring)."""
    source = f"cuda-l1:{path.stem}"
    unknown = {"claim_speedup": None, "claim_source": source, "claim_baseline": "eager"}  # a row that could not be read
    rows = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as e:
        raise CorpusError(f"cuda-l1 corpus {str(path)!r}: {e.strerror or e}") from None
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        row_id = f"{path.name}:{n}"
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            rows.append(CorpusRow("cuda-l1", row_id, n, claims=unknown, error=f"line {n} of {path.name} is not JSON: {e.msg}"))
            continue
        if not isinstance(d, dict) or not isinstance(d.get("ref_code"), str) or not _is_int(d.get("level_id")) \
                or not _is_int(d.get("task_id")):
            rows.append(CorpusRow("cuda-l1", row_id, n, claims=unknown,
                                  error=f"line {n} of {path.name} holds no task (level_id, task_id, ref_code)"))
            continue
        code = d.get("custom_code")
        code = code if isinstance(code, str) and code.strip() and code.strip() != "None" else None
        claim = d.get("score_default")
        claims = {"claim_speedup": float(claim) if isinstance(claim, (int, float)) and not isinstance(claim, bool) else None,
                  "claim_source": source, "claim_baseline": "eager"}
        rows.append(CorpusRow("cuda-l1", row_id, n, int(d["level_id"]), int(d["task_id"]), d["ref_code"], code, claims))
    return rows


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


_SKIP_WORDS = {"a", "an", "the", "simple", "model", "that", "which", "performs", "computes", "applies", "implements", "does",
               "single", "of", "and", "then", "using", "with", "for", "to", "on", "in", "operation", "followed", "by"}


def task_words(ref_code: str, most: int = 5) -> str:
    """A few words naming a task, from its ``Model``'s docstring (``Square_Matrix_Multiplication``);
    else the layers its constructor makes (``Conv2d_BatchNorm2d``); else ``task``."""
    try:
        tree = ast.parse(ref_code)
    except (SyntaxError, ValueError):
        return "task"
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    doc = ast.get_docstring(model) if model is not None else None
    if doc:
        first = re.split(r"(?<=[.:])\s|\n\s*\n", doc.strip())[0]
        first = re.sub(r"\([^)]*\)", " ", first)
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", first) if w.lower() not in _SKIP_WORDS]
        if words:
            return "_".join(w[:1].upper() + w[1:] for w in words[:most])
    layers = []
    for node in ast.walk(model) if model is not None else []:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "nn" and node.func.attr not in layers and node.func.attr not in ("Module", "Parameter"):
            layers.append(node.func.attr)
    return "_".join(layers[:most]) or "task"


_MALFORMED = '''"""A corpus row that could not be read: no task. Its sample fails before any judging."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x


def get_inputs():
    return [torch.zeros(1)]


def get_init_inputs():
    return []
'''


def keyed(rows: list[CorpusRow]) -> dict[str, CorpusRow]:
    """Each row by the key of its problem (``<level>/<stem>``; a task that comes twice keeps each row,
    the later ones with their line number)."""
    out: dict[str, CorpusRow] = {}
    for row in rows:
        key = f"{row.level_name}/{row.stem}"
        out[key if key not in out else f"{key}_line{row.line}"] = row
    return out


def write_problems(rows: list[CorpusRow], folder: Path) -> list[Problem]:
    """Each row's task as a problem file ``folder/<key>.py`` (:func:`keyed`). A reference that is not
    a problem file is kept beside it as ``<stem>.ref_code.txt`` and the problem file holds a
    stand-in that no sample reaches (its sample says why); one that parses but cannot run is found
    by the judge (``judge_error``)."""
    problems = []
    for key, row in keyed(rows).items():
        path = folder / f"{key}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        if row.error or not_a_problem(row.ref_code or ""):
            if row.ref_code is not None:
                _write(path.with_suffix(".ref_code.txt"), row.ref_code)
            _write(path, _MALFORMED)
        else:
            _write(path, row.ref_code)
        problems.append(load_problem(path))
    return problems


def _write(path: Path, text: str) -> None:
    """Writes ``text`` unless the file holds it already (a resumed run finds its own files)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def not_a_problem(ref_code: str) -> str | None:
    """Why ``ref_code`` is not a problem file (None when it is one), read as :func:`load_problem` reads one."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kbench-corpus-") as tmp:
        probe = Path(tmp) / "ref_code.py"
        probe.write_text(ref_code)
        try:
            load_problem(probe)
            return None
        except ProblemError as e:
            return str(e).replace(f"{probe} ", "").replace(str(probe), "ref_code")


def corpus_model(spec: str) -> Callable[[Problem], list[Sample]]:
    """The model of the corpus ``spec``: each problem's row (found by the problem's key, as
    :func:`write_problems` names them), as one sample (its kernel, or why there is none), with the
    row's claim in its ``meta``."""
    by_key = keyed(read(spec))

    def generate(problem: Problem) -> list[Sample]:
        row = by_key.get(problem.key)
        if row is None:
            return []
        meta = {**row.claims, "corpus_row": row.row_id}
        if row.error:
            return [Sample(0, None, row.error, failure="generation_error", meta=meta)]
        why = not_a_problem(row.ref_code or "") if problem.source == _MALFORMED else None
        if why:
            return [Sample(0, None, f"{row.row_id}: its ref_code is not a problem file: {why}", failure="judge_error", meta=meta)]
        if row.code is None:
            return [Sample(0, None, f"{row.row_id}: the corpus publishes no kernel for this task", failure="no_code", meta=meta)]
        name = f"{row.corpus}_{row.level_name}_{row.task_id}"
        return [Sample(0, Candidate(source=row.code, backend=detect_backend(row.code), name=name), meta=meta)]

    return generate


def corpus_problems(spec: str, folder: str | Path) -> list[Problem]:
    """The problems of the corpus ``spec``, written under ``folder``."""
    return write_problems(read(spec), Path(folder))


__all__ = ["CorpusError", "CorpusRow", "FORMATS", "corpus_model", "corpus_problems", "is_corpus", "keyed", "not_a_problem", "read",
           "read_cuda_l1", "task_words", "write_problems"]
