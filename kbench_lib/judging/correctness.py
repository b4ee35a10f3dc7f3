"""Correctness decided: whether the run failed (:func:`_run_failed`), each configuration's outputs
compared (:func:`_check_configs`), and the verdict from them (:func:`_decide`).
"""
from __future__ import annotations

from ..scoring import protocols
from ..isolation import sandbox
from . import config_checks, tf32
from ..suite.problems import model_name
from ..measure import tensorfile
from ..measure.compare import is_fingerprint
from .prepared import PreparedProblem
from .verdict import FAILURES, JudgeError, JudgeOptions, Verdict, _fail
from .worker_reports import _death, _died, _died_checking, _ended_early, _first, _forged_reports, _last, _plain_json, _strings, run_limit_s
from .outputs import _OutDir, _result_cap


def _run_failed(v: Verdict, res: sandbox.ProcessResult, prep: PreparedProblem, opts: JudgeOptions) -> bool:
    """Fills the verdict and returns True when the worker did not finish every case."""
    fail = _last(res.messages, "failure")
    done = _last(res.messages, "done")
    harness = _last(res.messages, "harness_error")
    if harness and not fail:
        imported = any(isinstance(m, dict) and m.get("event") == "stage" and m.get("stage") == "load" for m in res.messages)
        if not imported:  # no candidate code had run: the harness's own fault
            raise JudgeError(f"the judge's worker failed: {harness.get('message', '')[-2000:]}")
        # once the candidate is imported, a harness failure is its doing, or a report it wrote on the
        # channel to pass its own failure off as the judge's
        _fail(v, "crash", f"the worker failed after the candidate was imported: {str(harness.get('message', ''))[-2000:]}", res.log)
        return True
    # the first report of the inputs was sent before the candidate was imported: a later one is not the worker's
    drawn = _first(res.messages, "inputs")
    if drawn is not None:
        # drawn before the candidate was imported: the worker's inputs and reference state must be
        # the judge's, or nothing it returns could be compared
        cases = drawn.get("cases")
        for i, (case, got, timed) in enumerate(zip(prep.cases, cases if isinstance(cases, list) else [], prep.timed)):
            # a timed set is drawn later, just before its first timed call (its fingerprints: timed_inputs)
            sums = None if timed else [t["sums"] if is_fingerprint(t) else None for t in case.inputs]
            mine = _plain_json({"inputs": sums, "state": case.state_sums})
            if not isinstance(got, dict) or _plain_json({"inputs": got.get("inputs"), "state": got.get("state")}) != mine:
                raise JudgeError(f"the worker drew other inputs or reference state than the judge for case {i} ({case.config}): "
                                 f"{prep.problem.key}'s get_inputs/get_init_inputs are not reproducible on {prep.device}")
    forged = _forged_reports(res.messages)
    if forged:
        _fail(v, "crash", forged, res.log)
        return True
    if fail:
        failure = fail.get("failure") if fail.get("failure") in FAILURES else "crash"  # the message is the candidate's process's
        if failure == "compile_error":
            v.compiled = False
        v.flags.extend(_strings(fail.get("flags")))  # what the candidate left behind, when the worker could still tell
        _fail(v, failure, str(fail.get("message", ""))[-8000:], res.log)
        return True
    if _ended_early(res):
        if not (drawn is not None and _died_checking(res)):
            _died(v, res, "run", run_limit_s(prep, opts))
            return True
        # it died checking a set: that set's configuration fails (config_checks.gather); the rest stand
    if drawn is None:
        _fail(v, "crash", "the worker reported no fingerprints of the inputs it drew", res.log)
        return True
    if done:
        v.flags.extend(_strings(done.get("flags")))
    return False


def _check_configs(v: Verdict, res, prep: PreparedProblem, out: _OutDir, opts: JudgeOptions) -> list[dict]:
    """Correctness of every configuration (:mod:`kbench_lib.judging.config_checks`), here, on plain
    tensors (the arithmetic on the judge's GPU when it has one); the counts the verdict keeps."""
    cmp_dev = prep.device if prep.device.startswith("cuda") else None
    tol = protocols.tolerance(opts.protocol, prep.precision)

    def read(i: int):
        case = prep.cases[i]
        try:
            got = out.read(f"case_{i}.kbt", cmp_dev, _result_cap(case.expected, case.expected_input_grads, case.expected_param_grads))
        except (tensorfile.TensorFileError, OSError) as e:  # a missing or forged file is a crash, never a pass
            raise config_checks.ResultError(str(e)) from e
        if not isinstance(got, dict):
            raise config_checks.ResultError("the result is not a record")
        return got

    died = _death(res, "run", run_limit_s(prep, opts)) if _ended_early(res) else None
    configs = config_checks.gather(prep, res.messages, read, tol, cmp_dev, died)
    v.seeds_checked = configs[0]["sets"]
    v.variants_checked = sum(1 for c in configs[1:] if c["checked"] and c["kind"] in ("declared", "derived"))
    return configs


def _timed_result(configs: list[dict], prep: PreparedProblem) -> dict:
    """The result of the configuration the candidate was timed in, where the re-check of its timed
    outputs goes: the default's, or its eval configuration's where that was checked itself."""
    groups = prep.timing_groups
    name = groups[0][0] if groups else configs[0]["config"]
    entry = next((c for c in configs if c["config"] == name), None)
    if entry is not None and not entry.get("follows"):
        return entry
    return next((c for c in configs if c["config"] == model_name(name)), configs[0])


def _decide(v: Verdict, configs: list[dict], prep: PreparedProblem, opts: JudgeOptions, log: str | None = None) -> None:
    """The verdict's ``correct``, ``failure``, ``cause`` and message under its protocol; for fp32,
    the reference's own TF32 error on every configuration that fails by its error alone."""
    if prep.precision == "fp32":
        for c in configs:
            if c["checked"] and not c["hard_failure"] and not protocols.config_passes(c, protocols.KBENCH_TOLERANCE["fp32"]):
                _envelopes(c, prep)
    tol = protocols.tolerance(opts.protocol, prep.precision)
    config_checks.settle(configs, tol)
    v.protocol, v.configs = opts.protocol, configs
    errs = [c["max_abs_err"] for c in protocols.scoped(opts.protocol, configs) if c["max_abs_err"] is not None]
    v.max_abs_err = max(errs) if errs else None
    d = protocols.decide(configs, prep.precision, opts.protocol)
    v.cause = d["cause"]
    if d["correct"]:
        v.correct, v.failure = True, None
        return
    _fail(v, d["failure"], d["message"], log)  # the worker's own output beside the verdict, as for every failure


def _envelopes(config: dict, prep: PreparedProblem) -> None:
    """The reference's own errors in reduced numerics on a configuration that fails by the size of
    its error alone, narrowest first, until one holds the candidate's error (the wider ones are
    measured only where the narrower do not: each runs the reference once more)."""
    for numerics, (field, _) in zip(tf32.NUMERICS, protocols.ENVELOPES):
        config[field] = prep.reference_error(config["config"], numerics)
        if protocols.within_envelope(config):
            return
