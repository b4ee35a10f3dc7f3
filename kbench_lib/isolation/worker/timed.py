"""The profile and the timed runs: one configuration at a time (the default, or a variant), timed
over input sets the candidate has never seen, each drawn just before its first timed call
(:class:`.drawing._TimedDraws`); a sample of timed outputs kept for the judge's re-check, chosen
after each call returns (threat #8, #9); the flags a timed run can raise by itself."""
from __future__ import annotations

import gc
import os

import torch

from ...measure import profiling, timing
from ...measure.compare import fingerprint as _fingerprint
from ...measure.tensors import as_output_list, require_grad, to_device
from ...measure.unjoined import unjoined_confirmed
from ...suite.problems import Config, instantiate, load_problem, model_name
from ...suite.reference import set_flags
from .drawing import _draw_inputs, _TimedDraws, _urandom
from .probes import _descendants_cpu
from .report import Channel
from .results import _inputs_after, _snapshot, _Tensor, _write_tensors

_monotonic = timing._monotonic  # the clock bound before any candidate code runs
MEMO_RATIO = 0.3  # repeats on seen data under 30% of first calls on unseen data
MEMO_MIN_MS = 0.005


def timing_groups(cases: list[dict]) -> list[tuple[str, list[int], list[int]]]:
    """(configuration, indices of its timed sets, indices of its checked sets) for every
    configuration with timed sets in the job, in the order of their first timed set (the plan puts
    the default configuration's first: kbench_lib.judging.plan.plan_cases). The judge groups its plan
    by this same function."""
    names = list(dict.fromkeys(m["config"] for m in cases if m.get("timed")))

    def checked(name: str) -> list[int]:
        return [i for i, m in enumerate(cases) if not m.get("timed") and m["config"] == name]

    # an eval configuration without checked sets of its own (its reference does not depend on
    # training) warms up on its training configuration's
    return [(n, [i for i, m in enumerate(cases) if m.get("timed") and m["config"] == n], checked(n) or checked(model_name(n)))
            for n in names]


def timing_file(timed: list[int], variant: str | None) -> str:
    """The file a timed run's samples go to: ``timing.kbt`` for the default configuration, else
    named after the index of the variant's first timed set (no name the candidate could steer)."""
    return "timing.kbt" if variant is None else f"timing_{timed[0]}.kbt"


def _profile(job: dict, loaded: list[dict], timed: list[int], warm: list[int], make_model, device: torch.device, chan: Channel) -> None:
    """Profiles one call of the default configuration (on its first checked set, or on a set of
    its own where it has none; with no timed sets, timing off, on its first checked set) and sends
    the ``profile`` event; raises what the call raised. The model (the one the timing goes on to
    call) is called once before, unprofiled: a first call's one-time work (warm-up iterations before
    a CUDA-graph capture, cuDNN's benchmark search, a compile) is not what the timer measures, and
    under the profiler it cost minutes (an RNN's 25 warm-ups, 320,000 kernels recorded)."""
    cases = job["cases"]
    case = loaded[warm[0] if warm else timed[0]]
    if case["inputs"] is None:  # no checked set to profile on (not in kbench's plans): a set of its own
        case = {**case, "namespace": instantiate(load_problem(job["problem_path"], job.get("problem_level")),
                                                 Config(case["config"], cases[timed[0]].get("overrides") or {}))}
        _draw_inputs(case, {**cases[timed[0]], "input_seed": int.from_bytes(_urandom(8), "little") >> 1}, job, str(device))
    model = make_model(loaded[timed[0] if timed else warm[0]])  # the timed configuration's model, in its mode
    inputs = to_device(case["inputs"], device)
    with torch.no_grad():
        model(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        chan.send(event="profile", profile=profiling.profile_call(model, inputs, device.type))
    del inputs


class _Samples:
    """What a timed run keeps of its outputs (``after_call`` of the timing loop): the last output of
    each input set, held for one round so that an output still held from an earlier call shows, and
    one output per set kept for the judge's re-check, chosen after the call returned (reservoir
    sampling from the OS's randomness).

    An output in storage still held from an earlier call was not freshly allocated: whose earlier
    output it is tells a cached answer from a static buffer. ``reused`` counts calls that returned
    the tensor returned for the same input set earlier (a result kept per input and returned again:
    memoisation, threat #8); ``static`` counts calls whose output starts where a *different* input
    set's held output starts (one buffer the module keeps and rewrites each call: ``out=self.buf``,
    CUDA-graph outputs). A static buffer holds this call's answer when the call returns, and the
    re-check snapshots it then, so stale contents fail there as an output mismatch; the hazard is
    to a caller, whose earlier result changes under it. ``calls`` counts every call seen."""

    def __init__(self):
        self.samples: dict[int, object] = {}
        self.held: dict[int, tuple] = {}  # the last output of each input set, kept alive for one round
        self.seen: dict[int, int] = {}
        self.reused = 0
        self.static = 0
        self.calls = 0

    def keep(self, k, set_index, out) -> None:
        if k == 0:  # a run measured anew (trials._runs): its own calls are the ones re-checked
            self.seen.clear()
            self.samples.clear()
        # an output whose storage is still held from an earlier call was not allocated by this call
        # (a fresh result cannot live in memory that is in use). Each of its tensors is a static
        # buffer's when it starts at the same address as a tensor another input set's call returned
        # (that memory now holds this set's answer: the call wrote it); otherwise its storage is
        # held only as the same set's earlier answer, or as a part of another set's answer that this
        # one does not overwrite (a cache of slices of one block): a cached result. The address, not
        # the storage, decides, so a cache kept in one block is not taken for a static buffer.
        outs = as_output_list(out)
        tensors = [o for o in outs if type(o) is _Tensor and o.numel()]
        ptrs = {o.untyped_storage().data_ptr() for o in tensors}
        starts = {o.data_ptr() for o in tensors}
        self.calls += 1
        held = [p for _, p, _ in self.held.values()]
        if any(ptrs & p for p in held):
            others = set().union(*(st for i, (_, _, st) in self.held.items() if i != set_index))
            shared = [o for o in tensors if any(o.untyped_storage().data_ptr() in p for p in held)]
            static = [o for o in shared if o.data_ptr() in others]
            self.static += bool(static)
            self.reused += len(static) < len(shared)
        self.held[set_index] = (out, ptrs, starts)
        # reservoir sampling, decided after the call returned from the OS's randomness: each timed
        # call of a set is equally likely to be the one re-checked, and one always is
        self.seen[set_index] = self.seen.get(set_index, 0) + 1
        if int.from_bytes(os.urandom(4), "little") % self.seen[set_index] == 0:
            if all(type(o) is _Tensor for o in outs):
                self.samples[set_index] = _snapshot(outs)


def _warmup_sets(all_cases: list[dict], warm: list[int], device: torch.device, backward: bool) -> list | None:
    """The warm-up's input sets: the configuration's checked sets on the device (each carrying its
    upstream gradient last on a backward task), or None where it has none."""
    warmup_sets = [to_device(all_cases[i]["inputs"], device) for i in warm] or None
    warm_grads = [all_cases[i]["grad_output"] for i in warm] if backward and warm else None
    if backward and warmup_sets:
        for s in warmup_sets:
            require_grad(s)
        warmup_sets = [[*s, g] for s, g in zip(warmup_sets, warm_grads)]
    return warmup_sets


def _timed_call(model, draws: _TimedDraws, backward: bool):
    """The call the timing loop times: forward without gradients, or forward and backward with the
    set's upstream gradient (its last argument); each notes in ``draws`` that its set's call returned."""
    if backward:
        def call(*args):
            model.zero_grad(set_to_none=True)
            out = model(*args[:-1])
            torch.autograd.backward(as_output_list(out), args[-1])
            draws.returned = max(draws.returned, draws.current)
            return out
    else:
        def call(*inputs):
            with torch.no_grad():
                out = model(*inputs)
            draws.returned = max(draws.returned, draws.current)
            return out
    return call


def _time(job, all_cases, draws: _TimedDraws, warm, make_model, device, backward, outdir, chan, variant: str | None = None) -> list[str]:
    """Times one configuration (the default, or ``variant``) over a rotation of input sets the
    candidate has never seen, each drawn just before its first timed call (``draws``; warm-up runs
    on that configuration's correctness inputs); keeps a sample of timed outputs chosen after each
    call returns, so no call can know it will be re-checked (threat #8, #9). Reports the timed
    sets' fingerprints (``timed_inputs``), then a ``timing`` event (``variant_timing`` for a variant)."""
    tcfg = job.get("timing", {})
    t_start = _monotonic()
    timed = draws.indices
    model = make_model(all_cases[timed[0]])
    warmup_sets = _warmup_sets(all_cases, warm, device, backward)
    kept = _Samples()
    call = _timed_call(model, draws, backward)
    if not warmup_sets:  # no checked set to warm up on (not in kbench's plans): the warm-up draws the timed sets
        draws.arm()
    if device.type == "cuda" and warmup_sets:
        draws.reserve(warmup_sets[0][:-1] if backward else warmup_sets[0])

    set_flags()
    if device.type == "cpu":
        torch.set_num_threads(1)  # CPU timings: one core each for candidate and baseline, steadier
    n_others, cpu_before = _descendants_cpu()
    t_clock = _monotonic()
    result = timing.time_callable(
        call,
        draws,
        device.type,
        warmup_ms=tcfg.get("warmup_ms", 25.0),
        min_trials=tcfg.get("min_trials", 100),
        max_trials=tcfg.get("max_trials", 2000),
        budget_s=tcfg.get("budget_s", 10.0),
        target_rse=tcfg.get("target_rse", 0.005),
        after_call=kept.keep if job.get("guards", True) else None,
        warmup_sets=warmup_sets,
        on_trials=draws.arm,
        **({"trace": True} if tcfg.get("trace") and device.type == "cuda" else {}),
        **({"full_speed_ms": float(tcfg["full_speed_ms"])} if device.type == "cuda" and _positive(tcfg.get("full_speed_ms")) else {}),
    )
    t_written = _monotonic()
    result.others, result.others_cpu_s = n_others, round(max(0.0, _descendants_cpu()[1] - cpu_before), 3)
    _write_timed_record(draws, kept.samples, backward, outdir, variant, chan)
    result.phase_s = {"inputs": round(t_clock - t_start, 4), **result.phase_s, "write": round(_monotonic() - t_written, 4)}
    if variant is None:
        chan.send(event="timing", timing=result.as_dict())
    else:
        chan.send(event="variant_timing", config=variant, timing=result.as_dict())
    kept.held.clear()
    return _timing_flags(result, kept, device)


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < float("inf")


def _write_timed_record(draws: _TimedDraws, samples: dict, backward: bool, outdir: str, variant: str | None, chan: Channel) -> None:
    """Writes the timed run's record (its samples, and the timed sets as the calls left them) and
    reports at once, in ``timed_inputs``, the drawn sets' seeds and fingerprints and what the file
    holds; no collection (no finalizer of the candidate's) runs in between."""
    timed = draws.indices
    input_sets = [s[:-1] if backward else s for s in draws.drawn()]
    record = {"samples": {str(timed[j]): v for j, v in samples.items()},
              "inputs_after": {str(timed[j]): _inputs_after(s) for j, s in enumerate(input_sets)}}
    gc_was = gc.isenabled()
    gc.disable()  # no finalizer of the candidate's between the write and its report
    try:
        _write_tensors(os.path.join(outdir, timing_file(timed, variant)), record)
        # what the file holds, reported at once: candidate code can still run after this (a finalizer
        # when the worker lets go of its outputs, a patched settings property), and a file rewritten
        # then no longer matches (the judge compares)
        written = {"samples": {k: [_fingerprint(o)["sums"] for o in v] for k, v in record["samples"].items()},
                   "inputs_after": record["inputs_after"]}
        chan.send(event="timed_inputs", config=variant, cases=draws.fingerprints(), written=written)
    finally:
        if gc_was:
            gc.enable()


def _timing_flags(result: timing.Timing, kept, device: torch.device) -> list[str]:
    """The flags a timed run raises by itself: outputs still held from an earlier call (``kept``,
    the run's :class:`_Samples`, or the count of cached results alone), work left on another
    stream, first calls on new data much slower than repeats."""
    out = []
    reused = kept if isinstance(kept, int) else kept.reused
    static, calls = (0, 0) if isinstance(kept, int) else (kept.static, kept.calls)
    # a result kept per input set and returned again is a cheat (threat #8); a buffer the module
    # keeps and rewrites is a hazard to a caller only (its contents were re-checked as any output)
    if reused:
        out.append(f"output_reused: {reused} timed calls returned the tensor returned for the same input set earlier (a cached result)")
    if static:
        out.append(f"static_output_buffer: {static} of {calls} timed calls returned storage the module keeps and rewrites "
                   f"(a caller's earlier result changes under it)")
    # a single trial with a late gap is host jitter; a candidate that leaves work on another stream
    # does so on (nearly) every call, in the timed run and in its re-check
    if unjoined_confirmed(result):
        out.append(f"side_stream_unjoined: {result.unjoined_trials} of {result.n_trials} timed calls and {result.unjoined_recheck} of "
                   f"{result.recheck_calls} calls of a re-check left work running on another stream")
    # the first call on never-seen data against later calls on the same data: a kernel that does
    # the work takes as long both times (the L2 cache is flushed before each); one that caches
    # answers by pointer or fingerprint is fast only once it has seen the data (threat #8)
    # (CUDA only: with the L2 flushed and device events the two are comparable; on a shared CPU the
    # first calls can be slowed by thread-pool wake-ups far beyond any real difference). The fastest
    # first call is read, not their median: a memoiser misses on every first call, while the judge's
    # host, waking late from the sync behind a first call, can slow a third of an honest call's first
    # calls on a loaded host, enough to move their median (fewer after the idle-gap re-check,
    # timing._FlushedCalls.first_gap_rechecked; benchmarks/first_round_wakeups.py)
    fastest = result.first_round_fastest_ms if result.first_round_fastest_ms is not None else result.first_round_ms
    if (device.type == "cuda" and fastest and result.median_ms < MEMO_RATIO * fastest and fastest - result.median_ms > MEMO_MIN_MS):
        late = f" ({result.first_round_late} of them issued late)" if result.first_round_late else ""
        out.append(f"memoisation_suspected: first calls on new inputs took {fastest:.4g} ms at the fastest ({result.first_round_ms:.4g} "
                   f"median){late}, repeats {result.median_ms:.4g} ms")
    return out
