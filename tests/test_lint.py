import json

import pytest

from kbench_lib.cli import main
from kbench_lib.suite.lint import lint_problem
from kbench_lib.suite.problem_checks import degenerate_reasons
from kbench_lib.suite.problems import load_problem

BROKEN = {
    "1_Zero_Output.py": "all-zero",
    "2_Constant_Output.py": "mean broadcast",
    "3_Ignores_Input.py": "inputs change",
    "4_Random_Forward.py": "two runs",
    "5_NaN_Output.py": "non-finite",
    "6_Ignores_Params.py": "parameters change",
}


@pytest.mark.parametrize("name, words", sorted(BROKEN.items()))
def test_lint_rejects_broken_problems(fixtures, name, words):
    report = lint_problem(load_problem(fixtures / "broken_problems" / name), device="cpu", small=True)
    assert not report.ok
    assert any(words in i.reason for i in report.issues), [i.reason for i in report.issues]


def test_lint_accepts_a_good_problem(scale_add_relu):
    report = lint_problem(scale_add_relu, device="cpu", small=True)
    assert report.ok, report.issues
    assert report.lowp_ok == {"bf16": True, "fp16": True}


def test_lint_cli_json_last_line(fixtures, capsys):
    code = main(["lint", str(fixtures / "broken_problems"), "--small", "--json", "--no-lowp"])
    assert code == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["total"] == len(BROKEN) and out["failed"] == len(BROKEN)
    assert {f["check"] for f in out["failures"]} >= {"degenerate", "deterministic", "finite"}
    assert main(["lint", str(fixtures / "broken_problems"), "--small", "--json", "--no-lowp", "--strict"]) == 1


def test_lint_report_resumes_where_it_stopped(fixtures, tmp_path, capsys):
    """A lint cut off part-way goes on with --resume: problems already in the report are skipped."""
    report = tmp_path / "lint.jsonl"
    args = ["lint", str(fixtures / "broken_problems"), "--small", "--json", "--no-lowp", "--report", str(report)]
    main(args + ["--filter", "1_Zero", "2_Constant"])
    assert [json.loads(x)["problem"].split("/")[-1] for x in report.read_text().splitlines()] == ["1_Zero_Output", "2_Constant_Output"]
    capsys.readouterr()
    main(args + ["--resume"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["total"] == len(BROKEN) - 2  # only the ones not linted before
    lines = [json.loads(x) for x in report.read_text().splitlines()]
    assert len(lines) == len(BROKEN) and len({x["problem"] for x in lines}) == len(BROKEN)
    assert all(x["failed"] for x in lines)


def test_degenerate_reasons_on_outputs():
    import torch

    assert degenerate_reasons([torch.zeros(10)])
    assert degenerate_reasons([torch.full((10,), 3.0)])
    x = torch.randn(10)
    assert degenerate_reasons([x]) == []
    assert degenerate_reasons([x], [x.clone()]) == ["the output does not change when the inputs change"]
