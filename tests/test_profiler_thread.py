"""The judge's profiler sessions on one thread of its process (kbench_lib.measure.profiling.on_session_thread):
sessions from several threads of one process crash Kineto, and a batch over several GPUs has one
judging thread per GPU. What runs there runs as it would on the caller: its result or its error,
its grad mode, its cores; and the profile it takes is the one taken on the caller."""
import os
import threading

import pytest
import torch

from kbench_lib.measure import profiling, timing


def test_a_session_runs_on_the_one_profiler_thread_with_the_callers_state():
    seen = []

    def where():
        seen.append((threading.current_thread().name, torch.is_grad_enabled(),
                     os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None))
        return len(seen)

    callers = []

    def caller(grad: bool):
        with torch.set_grad_enabled(grad):
            callers.append(profiling.on_session_thread(where))

    threads = [threading.Thread(target=caller, args=(g,)) for g in (False, True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(callers) == [1, 2, 3]
    names = {name for name, _, _ in seen}
    assert len(names) == 1 and names.pop().startswith(profiling.SESSION_THREAD)  # one thread made them all
    assert sorted(g for _, g, _ in seen) == [False, False, True]  # each with its caller's grad mode


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_a_session_keeps_to_its_callers_cores():
    one = {min(os.sched_getaffinity(0))}
    got = []

    def pinned():
        os.sched_setaffinity(0, one)  # this thread only (a judging thread keeps to its GPU's cores)
        got.append(profiling.on_session_thread(lambda: os.sched_getaffinity(0)))

    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    assert got == [one]


def test_an_error_comes_back_to_the_caller_and_a_session_may_nest():
    def fails():
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        profiling.on_session_thread(fails)
    # a session that asks for the profiler thread again runs where it is (no deadlock)
    assert profiling.on_session_thread(lambda: profiling.on_session_thread(lambda: threading.current_thread().name)).startswith(
        profiling.SESSION_THREAD)


def test_the_profile_and_the_cpu_timing_are_those_taken_on_the_caller():
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.GELU())
    x = torch.randn(4, 16)
    with torch.no_grad():
        here = profiling.profile_call(model, [x], "cpu")
        there = profiling.profile_call(model, [x], "cpu", one_thread=True)
    assert here["ops"] == there["ops"] and here["ops"]  # e.g. addmm and gelu, counted alike
    t = timing.time_callable(model, [[x]], "cpu", min_trials=5, max_trials=5, budget_s=1.0, warmup_ms=1.0, one_thread=True)
    assert t.n_trials == 5 and t.median_ms > 0  # the CPU clock has no profiler session: the flag is accepted and unused
