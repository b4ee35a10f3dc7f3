"""Soft verifiers: predict, before the judge runs a candidate, that it would fail.

robust-kbench filters proposals with LLM "soft verifiers" so that the GPU is spent on candidates
likely to pass. Each verifier here looks at a candidate and decides ``pass`` or ``fail`` with a
reason; :class:`~.search.Search` records every decision beside the judge's verdict (and, when the
run asks for ground truth, judges rejected candidates too), so that
:func:`kbench_lib.reports.search_metrics.verifier_confusion` can measure precision, recall and judge time
saved. A verifier only ever advises: it never changes a verdict.

- ``compile``, ``memory``, ``numerics`` (:class:`LanguageModelVerifier`): a language model reads
  the architecture and the candidate and answers whether it would fail to build or load, fault at
  run time (out-of-bounds accesses, bad launch configurations, out of memory) or give wrong
  numbers; its answer ends with ``VERDICT: PASS`` or ``VERDICT: FAIL``. Requests go through the
  response cache (replayable). An answer without a verdict, or a refused request, passes the
  candidate (a verifier that cannot tell never costs a candidate).
- ``culprit`` (:class:`CulpritVerifier`, offline): for the tuner's candidates, learns from the
  search's own verdicts: a knob setting that took a failed candidate away from the seed is a
  suspect, and a proposal that repeats a suspect setting is predicted to fail.
"""
from __future__ import annotations

import re

from ..suite.problems import Problem
from .search import Decision

QUESTIONS = {
    "compile": ("build", "Will this code fail to build or import? Check the CUDA/C++/Triton syntax and types, the "
                "`load_inline` call (declarations in `cpp_sources` matching the definitions, `functions` naming them), "
                "Triton's rules (power-of-two `tl.arange` sizes, `tl.constexpr` block sizes), and Python errors at import."),
    "memory": ("run", "Will this code fault when it runs? Check index arithmetic and bounds masks against every configuration's "
               "sizes (out-of-bounds reads or writes, missing tail handling), launch configurations (threads per block at most "
               "1024, shared memory per block), integer overflow in offsets, and memory it allocates."),
    "numerics": ("compare", "Will this code give outputs that differ from the original `Model`'s beyond the tolerance, "
                 "or the wrong shapes or dtypes? Check the formula against the original, reductions (all elements covered, "
                 "numerically stable), broadcasting, parameters and their names, and the precision of the arithmetic."),
}
PROMPT = """You review a candidate GPU kernel before it is {stage} on the GPU, to predict whether it would fail.

The original PyTorch architecture:
```python
{problem}
```

The candidate (`ModelNew` must compute the same outputs):
```python
{candidate}
```

{question}

Think briefly, then end your answer with one line: `VERDICT: PASS` if you expect it to work, or `VERDICT: FAIL: <reason>`."""
_VERDICT = re.compile(r"VERDICT:\s*(PASS|FAIL)\b[:\s-]*(.*)", re.IGNORECASE)


def parse_verdict(text: str | None) -> tuple[bool | None, str]:
    """(passed, reason) from a verifier's answer; passed is None when it gave no verdict."""
    found = _VERDICT.findall(text or "")
    if not found:
        return None, "no verdict in the answer"
    word, reason = found[-1]
    return word.upper() == "PASS", reason.strip()[:500]


class LanguageModelVerifier:
    def __init__(self, kind: str, model):
        if kind not in QUESTIONS:
            raise ValueError(f"unknown verifier {kind!r}: use {sorted(QUESTIONS)} or culprit")
        self.name, self.model = kind, model  # a kbench_lib.generation.LanguageModel

    def messages(self, problem: Problem, source: str) -> list[dict]:
        stage, question = QUESTIONS[self.name]
        return [{"role": "user", "content": PROMPT.format(stage=stage, problem=problem.source.strip(), candidate=source.rstrip(),
                                                          question=question)}]

    def check(self, problem: Problem, attempts: list, history: list) -> list[Decision]:
        prompts = [(self.messages(problem, a.source), 0) for a in attempts]
        out = []
        for response, _, refused in self.model.respond(prompts, f"{problem.key} ({self.name} verifier)"):
            if response is None:
                out.append(Decision(self.name, True, f"no decision (request refused: {refused[:200]})"))
                continue
            passed, reason = parse_verdict(response.text)
            out.append(Decision(self.name, passed is not False, reason if passed is not None else "no decision: " + reason,
                                response.prompt_tokens, response.completion_tokens))
        return out


class CulpritVerifier:
    name = "culprit"

    @staticmethod
    def _suspects(history: list) -> dict:
        """{(knob, value): failed proposal id} for settings that differed from the seed in a failed candidate."""
        passed = {}
        for a in history:
            if a.knobs and a.trusted:
                passed.update({kv: True for kv in a.knobs.items()})
        seed = next((a.knobs for a in history if a.request.operation == "sample" and a.request.index == 0 and a.knobs), None)
        suspects = {}
        for a in history:
            if not a.knobs or a.trusted or not a.observation.get("failure"):
                continue
            for kv in a.knobs.items():
                if (seed is None or seed.get(kv[0]) != kv[1]) and kv not in passed:
                    suspects.setdefault(kv, a.id)
        return suspects

    def check(self, problem: Problem, attempts: list, history: list) -> list[Decision]:
        suspects = self._suspects(history)
        out = []
        for a in attempts:
            hits = [(k, v, suspects[(k, v)]) for k, v in (a.knobs or {}).items() if (k, v) in suspects]
            reason = "; ".join(f"{k}={v} as in failed {pid}" for k, v, pid in hits[:3])
            out.append(Decision(self.name, not hits, reason))
        return out


VERIFIERS = ("compile", "memory", "numerics", "culprit")


def make_verifiers(names, model_spec: str | None = None, generation=None) -> tuple:
    """Verifiers by name; the language-model ones share one model (``model_spec``), asked with
    ``generation`` options (temperature 0 by default: a verifier should not gamble)."""
    names = [n for n in (names or []) if n]
    unknown = [n for n in names if n not in VERIFIERS]
    if unknown:
        raise ValueError(f"unknown verifiers {unknown}: use {list(VERIFIERS)}")
    model = None
    if any(n in QUESTIONS for n in names):
        from ..generation import GenerationOptions, language_model
        from ..generation.spec import is_language_model

        if not model_spec or not is_language_model(model_spec):
            raise ValueError(f"the {', '.join(n for n in names if n in QUESTIONS)} verifiers need a language model: give a verifier model spec")
        options = GenerationOptions.from_value(generation)
        from dataclasses import replace

        model = language_model(model_spec, replace(options, samples=1, temperature=0.0, max_tokens=min(options.max_tokens, 2048)))
    return tuple(LanguageModelVerifier(n, model) if n in QUESTIONS else CulpritVerifier() for n in names)
