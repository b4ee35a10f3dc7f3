"""What a batch does with one sample, wherever it is judged (a lane thread, a lane's process, a
Ray actor): its verdict (:func:`_judge_one`), the ``judge_error`` verdict when the judge itself
fails, the record's columns beside the verdict, and the runs' folder and run ids. Split from
:mod:`kbench_lib.batch.runner` so that the lane processes and the cluster use these without importing
the runner that starts them.
"""
from __future__ import annotations

import datetime as _dt
import traceback
from dataclasses import replace

from ..judging.pipeline import JudgeError, JudgeOptions, Verdict, judge
from ..suite.problems import Problem
from ..core.provenance import device_name, environment
from ..scoring.records import MAX_SOURCE_CHARS


def new_run_id(prefix: str = "run") -> str:
    return f"{prefix}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def _error_verdict(problem: Problem, backend: str, device: str, opts: JudgeOptions, failure: str, message: str) -> Verdict:
    # a sample that never reached the judge (no code, a generation error) or that the judge could not
    # judge: its cause is its failure, under the run's protocol
    return Verdict(
        problem=problem.key, level=problem.level, backend=backend, device=device, device_name=device_name(device),
        precision=opts.precision, failure=failure, message=message[-4000:], env=environment(device),
        protocol=opts.protocol, cause=failure,
    )


def _judge_one(problem: Problem, sample, err, prepared, device: str, opts: JudgeOptions) -> Verdict:
    if sample is None or sample.candidate is None:
        return _error_verdict(problem, "unknown", device, opts, (sample and sample.failure) or "load_error", err or sample.error)
    if isinstance(prepared, str):  # the problem's reference could not be prepared
        return _judge_error(problem, sample.candidate, device, opts, prepared)
    try:
        return judge(problem, sample.candidate, replace(opts, device=device), prepared=prepared)
    except Exception as e:  # noqa: BLE001 - never lose the batch to one candidate
        return _judge_error(problem, sample.candidate, device, opts, e)


def _judge_error(problem: Problem, candidate, device: str, opts: JudgeOptions, why: str | BaseException) -> Verdict:
    """A ``judge_error`` verdict for ``candidate``: the judge could not judge it (``why``: a
    message, a :class:`JudgeError`, or any other exception being handled, with its traceback)."""
    message = why if isinstance(why, str) else str(why) if isinstance(why, JudgeError) else traceback.format_exc()[-3000:]
    v = _error_verdict(problem, candidate.backend, device, opts, "judge_error", message)
    v.kernel_sha = candidate.sha[:16]  # which candidate it was (a search's resume matches on it)
    return v


def judged_columns(problem: Problem, sample) -> dict:
    """What a record holds beside the verdict (the same locally and on Ray): the sample's
    generation metadata, the problem's path and the candidate's source (the explorer shows them)."""
    judged = {**(sample.meta if sample is not None else {}), "problem_path": str(problem.path)}
    if sample is not None and sample.candidate is not None:
        judged["candidate_source"] = sample.candidate.source[:MAX_SOURCE_CHARS]
    return judged
