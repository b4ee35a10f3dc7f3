"""When a run without a profile is a cheat (``profile_missing``), a hazard (``context_lost``: the
worker's checks stopped after another configuration left the CUDA context unusable), or nothing
(the configuration it is timed in failed, so no profile was due)."""
from types import SimpleNamespace

from kbench_lib.scoring import flags
from kbench_lib.judging.config_checks import new_config
from kbench_lib.judging.profile_check import _check_profile_due
from kbench_lib.judging.verdict import JudgeOptions, Verdict


def _prep():
    spec = lambda name, timed=False: SimpleNamespace(config=SimpleNamespace(name=name), timed=timed)  # noqa: E731
    return SimpleNamespace(precision="fp32", specs=[spec("default"), spec("default"), spec("derived0"), spec("default", True)])


def _passed(name="default"):
    c = new_config(name, "default")
    c.update(checked=True, passed=True, tol_needed=0.0, max_abs_err=0.0, sets=2)
    return c


def _flags(messages, timed, guards=True):
    v = Verdict(problem="p", level=1, backend="cuda", device="cuda", device_name="x", precision="fp32", small=False)
    _check_profile_due(v, SimpleNamespace(messages=messages), _prep(), JudgeOptions(guards=guards), timed)
    return [flags.flag_name(f) for f in v.flags], v.flags


def test_no_profile_after_passing_checks_is_a_cheat():
    names, _ = _flags([{"event": "done", "flags": []}], _passed())
    assert names == ["profile_missing"] and flags.flag_class("profile_missing") == "cheat"


def test_a_profile_reported_or_guards_off_raise_nothing():
    assert _flags([{"event": "profile", "profile": {}}, {"event": "done"}], _passed())[0] == []
    assert _flags([{"event": "done"}], _passed(), guards=False)[0] == []


def test_no_profile_is_due_where_the_timed_configuration_failed():
    failed = new_config("default", "default")
    failed.update(checked=True, hard_failure="output_mismatch", message="output 0 is not a tensor", sets=1)
    assert _flags([{"event": "done"}], failed)[0] == []


def test_checks_stopped_by_another_configuration_are_a_hazard_naming_the_failure():
    stop = {"event": "stopped", "case": 2, "reason": "the CUDA context was unusable after derived0 failed (runtime_error)"}
    names, text = _flags([stop, {"event": "done"}], _passed())
    assert names == ["context_lost"] and flags.flag_class("context_lost") == "hazard"
    assert "derived0 failed" in text[0]
    assert flags.trusted(True, text, "no-cheat") and not flags.trusted(True, text, "strict")


def test_a_stop_that_names_the_timed_configuration_or_no_case_is_still_a_missing_profile():
    # the timed configuration passed, so a stop report naming one of its sets (or none) is not the worker's
    for case in (0, None, 99, "2"):
        names, _ = _flags([{"event": "stopped", "case": case, "reason": "x"}, {"event": "done"}], _passed())
        assert names == ["profile_missing"], case
