"""Failure messages start at the candidate's own frames (kbench_lib.core.tracebacks)."""
from kbench_lib.core.tracebacks import candidate_frames_first, is_candidate_path

FORWARD = """Traceback (most recent call last):
  File "/work/kbench/kbench_lib/isolation/worker/checks.py", line 364, in _check_one
    out = model(*inputs)
          ^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1778, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1789, in _call_impl
    return forward_call(*args, **kwargs)
  File "/dev/shm/kbench-job-4315-5uc43dwb/candidate.py", line 6, in forward
    return helper(a) + b
  File "/dev/shm/kbench-job-4315-5uc43dwb/candidate.py", line 3, in helper
    return torch.nn.functional.linear(a, a)
  File "/venv/lib/python3.11/site-packages/torch/nn/functional.py", line 10, in linear
    raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
RuntimeError: mat1 and mat2 shapes cannot be multiplied"""


def test_harness_frames_before_the_candidate_are_hidden():
    out = candidate_frames_first(FORWARD)
    lines = out.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == "  [3 frames of the harness hidden]"
    assert lines[2] == '  File "candidate.py", line 6, in forward'
    assert "isolation/worker/" not in out and "_call_impl" not in out and "kbench-job" not in out
    # what the candidate called, after its own frames, stays: it is where the error came from
    assert "functional.py" in out and lines[-1] == "RuntimeError: mat1 and mat2 shapes cannot be multiplied"
    assert out.count("candidate.py") == 2


def test_each_traceback_of_a_chain_is_trimmed():
    first = FORWARD.replace("RuntimeError: mat1", "ValueError: mat1")
    chained = first + "\n\nDuring handling of the above exception, another exception occurred:\n\n" + FORWARD
    out = candidate_frames_first(chained)
    assert out.count("[3 frames of the harness hidden]") == 2 and "isolation/worker/" not in out
    assert "During handling of the above exception" in out


def test_import_time_failure():
    text = """Traceback (most recent call last):
  File "/k/kbench_lib/isolation/worker/run.py", line 291, in _load_candidate
    module = import_candidate(job["candidate_path"])
  File "/k/kbench_lib/isolation/worker/run.py", line 93, in import_candidate
    spec.loader.exec_module(module)
  File "<frozen importlib._bootstrap_external>", line 940, in exec_module
  File "<frozen importlib._bootstrap>", line 241, in _call_with_frames_removed
  File "/tmp/kbench-job-1-x/candidate.py", line 4, in <module>
    import not_a_module
ModuleNotFoundError: No module named 'not_a_module'"""
    out = candidate_frames_first(text)
    assert "[4 frames of the harness hidden]" in out and "importlib" not in out
    assert out.endswith("ModuleNotFoundError: No module named 'not_a_module'")


def test_text_without_candidate_frames_is_unchanged():
    harness_only = FORWARD.replace("/dev/shm/kbench-job-4315-5uc43dwb/candidate.py", "/k/kbench_lib/measure/compare.py")
    assert candidate_frames_first(harness_only) == harness_only
    for text in ("output 0 is a list, not a torch.Tensor", "", None, 'File "x"'):
        assert candidate_frames_first(text) == text


def test_front_truncated_trace_still_trims():
    """The worker keeps a trace's last characters: the text may begin in the middle of a frame."""
    cut = FORWARD[FORWARD.index("^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^") + 10:]
    out = candidate_frames_first(cut)
    assert out.splitlines()[1] == "  [1 frame of the harness hidden]" and "_call_impl" not in out


def test_candidate_path_rule():
    assert is_candidate_path("/tmp/kbench-job-1/candidate.py")
    assert not is_candidate_path("/k/kbench_lib/core/candidates.py") and not is_candidate_path("/x/my_candidate.py")
