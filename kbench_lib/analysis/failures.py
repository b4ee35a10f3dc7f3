"""The failure taxonomy, from the records alone.

Every candidate has an outcome: ``trusted``, ``flagged`` (correct, with a reason to distrust it) or
a failure category (``compile_error``, ``output_mismatch``, ...). Each category belongs to the judge's
stage where it arises (:data:`STAGE`). Below the category, a *class*:

- compile errors: the compiler's own first error line (nvcc, g++, Triton, Python's parser), with
  names, numbers and paths replaced by placeholders, so the same mistake in two kernels is one class;
- runtime errors, crashes and the rest of the run: the exception's type (``ValueError``), or the CUDA
  error it reports (``CUDA: an illegal memory access was encountered``);
- wrong answers: the comparison's own words (``N elements outside atol=rtol``, ``non-finite values``);
- flags: the threat class (docs/THREAT_MODEL.md) the flag belongs to (:data:`kbench_lib.scoring.flags.THREAT`).
"""
from __future__ import annotations

import re

import pandas as pd

from ..scoring import metrics
from ..scoring.flags import THREAT  # flag name -> threat class (docs/THREAT_MODEL.md): one table, the flags' registry

STAGE = {
    "no_code": "generation", "generation_error": "generation",
    "verifier_rejected": "verifier",  # a soft verifier kept the candidate from the judge (kbench_lib.strategies)
    "compile_error": "build",
    "load_error": "load",
    "output_mismatch": "correctness", "shape_mismatch": "correctness", "dtype_mismatch": "correctness",
    "nonfinite": "correctness", "input_mutated": "correctness",
    "runtime_error": "run", "oom": "run", "timeout": "run", "crash": "run",
    "judge_error": "judge",
    "strategy_error": "strategy",  # the search broke on this problem (kbench_lib.strategies.run)
}
STAGE_ORDER = ("generation", "verifier", "build", "load", "run", "correctness", "judge", "strategy", "flagged", "trusted")


def outcome(df: pd.DataFrame) -> pd.Series:
    """``trusted``, ``flagged`` or the failure category of each row."""
    ok = metrics.trusted(df)
    return pd.Series(df["failure"].where(df["failure"].notna(), ok.map({True: "trusted", False: "flagged"})), index=df.index)


def stage(df: pd.DataFrame) -> pd.Series:
    o = outcome(df)
    return o.map(lambda c: c if c in ("trusted", "flagged") else STAGE.get(c, "other"))


_LOCATION = re.compile(r"^\S*?(\.(cu|cpp|cc|h|cuh|py))?(:\d+)+:?\s*")
_QUOTED = re.compile(r"(‘[^’]*’|'[^']*'|\"[^\"]*\"|`[^`]*`)")
_NUMBER = re.compile(r"\b\d+\b")


def _normalise(line: str) -> str:
    line = _LOCATION.sub("", line.strip())
    line = _QUOTED.sub("‹…›", line)
    line = _NUMBER.sub("N", line)
    return re.sub(r"\s+", " ", line).strip()[:120]


def compile_error_class(message: str | None) -> str:
    """The compiler's first error line, normalised (see the module's note); ``unknown`` without one."""
    text = message or ""
    for pattern in (r"^.*\berror\b\s*:?\s*(.+)$", r"^.*(CompilationError.*)$", r"^\s*(\w*Error: .+)$"):
        for line in text.splitlines():
            m = re.match(pattern, line)
            if m and "subcommand failed" not in line and "Error building extension" not in line:
                body = m.group(1)
                return _normalise(body) or "unknown"
    return "unknown"


_CUDA = re.compile(r"CUDA error: ([^\n.]+)")
_EXC = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit))\b:?(.*)$")


def runtime_error_kind(message: str | None) -> str:
    """The CUDA error reported, or the last exception type in the traceback, or the message's
    first line normalised."""
    text = message or ""
    m = _CUDA.search(text)
    if m:
        return f"CUDA: {m.group(1).strip()}"
    kinds = [m.group(1).split(".")[-1] for m in (_EXC.match(line) for line in text.splitlines()) if m]
    if kinds:
        return kinds[-1]
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _normalise(first) or "unknown"


def mismatch_kind(message: str | None) -> str:
    """A wrong answer's description without its numbers: ``N of N elements outside atol=rtol=N``."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", (message or "").splitlines()[0] if message else "")
    text = re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", text)
    text = re.sub(r"\(max abs err [^)]*\)", "", text)
    return re.sub(r"\s+", " ", text).strip()[:120] or "unknown"


def threat_classes(flags) -> list[str]:
    names = [str(f).split(":", 1)[0].strip() for f in (flags if flags is not None else [])]
    return sorted({THREAT.get(n, f"other: {n}") for n in names})


def _text(v) -> str:
    """A record's text field: '' for null (None, or NaN in a pandas object column)."""
    return v if isinstance(v, str) else ""


def failure_class(row) -> str:
    """The class below the category for one record row."""
    cat = row.get("failure")
    msg = _text(row.get("message")) or _text(row.get("error"))
    if cat == "compile_error":
        return compile_error_class(_text(row.get("error")) + "\n" + _text(row.get("message")))
    if cat in ("output_mismatch", "shape_mismatch", "dtype_mismatch", "nonfinite", "input_mutated"):
        return mismatch_kind(_text(row.get("message")))
    if isinstance(cat, str):
        return runtime_error_kind(msg)
    return ""


def taxonomy(df: pd.DataFrame) -> pd.DataFrame:
    """One row per record: model, level, problem, sample, turn, outcome, stage, class (the failure's
    class, or the flags' threat classes), threats (list), message (first lines)."""
    if not len(df):
        return pd.DataFrame(columns=["model", "level", "problem", "sample", "turn", "outcome", "stage", "class", "threats", "message"])
    out = df[[c for c in ("source", "run_id", "model", "level", "problem", "tags", "sample", "turn", "flags") if c in df]].copy()
    out["outcome"] = outcome(df)
    out["stage"] = stage(df)
    rows = df.to_dict("records")
    out["threats"] = [threat_classes(r.get("flags")) for r in rows]
    out["class"] = [failure_class(r) if isinstance(r.get("failure"), str) else ", ".join(t) for r, t in zip(rows, out["threats"])]
    out["message"] = [compile_excerpt(_text(r.get("error")) + "\n" + _text(r.get("message"))) if r.get("failure") == "compile_error" else
                      _head(_text(r.get("message")) or _text(r.get("error")) or "; ".join(map(str, r.get("flags") if r.get("flags") is not None else [])))
                      for r in rows]
    return out.reset_index(drop=True)


def compile_excerpt(text: str, after: int = 3) -> str:
    """The compiler output from its first error line on (a few lines), else the last lines."""
    lines = [line for line in _text(text).splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if re.search(r"\berror\b", line) and "subcommand failed" not in line:
            return "\n".join(lines[i:i + 1 + after])[:600]
    return _head(text)


def _head(text: str, lines: int = 6, chars: int = 600) -> str:
    kept = [line for line in str(text).splitlines() if line.strip()]
    return "\n".join(kept[-lines:])[-chars:] if kept else ""


def breakdown(tax: pd.DataFrame, by: str = "level", what: str = "stage") -> pd.DataFrame:
    """Counts of ``what`` (stage, outcome or class) per ``by`` (level, model, tag, ...); ``by="tag"``
    counts a candidate once under each of its problem's tags."""
    t = tax
    if by == "tag":
        t = tax.assign(tag=tax["tags"].map(lambda x: list(x) if x is not None and len(x) else ["(untagged)"])).explode("tag")
    counts = t.groupby([by, what]).size().unstack(fill_value=0)
    if what == "stage":
        counts = counts[[s for s in STAGE_ORDER if s in counts] + [c for c in counts if c not in STAGE_ORDER]]
    return counts


def classes(tax: pd.DataFrame, outcomes=None) -> pd.DataFrame:
    """How often each (outcome, class) occurs, most frequent first, with one example problem."""
    t = tax[tax["outcome"] != "trusted"]
    if outcomes is not None:
        t = t[t["outcome"].isin(list(outcomes))]
    if not len(t):
        return pd.DataFrame(columns=["outcome", "class", "count", "example"])
    g = t.groupby(["outcome", "class"])
    out = g.size().rename("count").to_frame().join(g["problem"].first().rename("example")).reset_index()
    return out.sort_values(["count", "outcome", "class"], ascending=[False, True, True]).reset_index(drop=True)


def threats(tax: pd.DataFrame) -> pd.DataFrame:
    """Flags by threat class and outcome (a flag on a failed candidate counts too)."""
    t = tax.explode("threats").dropna(subset=["threats"])
    if not len(t):
        return pd.DataFrame(columns=["threat", "outcome", "count"])
    return t.groupby(["threats", "outcome"]).size().rename("count").reset_index().rename(columns={"threats": "threat"})


def examples(tax: pd.DataFrame, outcome_or_class: str, n: int = 3) -> pd.DataFrame:
    """Up to ``n`` rows whose outcome or class is ``outcome_or_class``, with their messages."""
    t = tax[(tax["outcome"] == outcome_or_class) | (tax["class"] == outcome_or_class) | (tax["stage"] == outcome_or_class)]
    return t[["model", "problem", "sample", "outcome", "class", "message"]].head(n).reset_index(drop=True)


def examples_html(tax: pd.DataFrame, n: int = 3) -> str:
    """Every (outcome, class) as a collapsed section, most frequent first: a click opens up to ``n``
    examples with their model, problem, sample and message."""
    import html

    parts = []
    for r in classes(tax).to_dict("records"):
        t = tax[(tax["outcome"] == r["outcome"]) & (tax["class"] == r["class"])].head(n)
        items = "".join(f"<p><b>{html.escape(str(e['problem']))}</b> · {html.escape(str(e['model']))} · sample {e['sample']}</p>"
                        f"<pre style='white-space:pre-wrap;background:#f6f6f6;padding:4px'>{html.escape(str(e['message']))}</pre>"
                        for e in t.to_dict("records"))
        parts.append(f"<details><summary><code>{html.escape(r['outcome'])}</code> · {html.escape(r['class'] or '-')} "
                     f"({r['count']})</summary>{items}</details>")
    return "\n".join(parts) or "<p>No failed or flagged candidate.</p>"
