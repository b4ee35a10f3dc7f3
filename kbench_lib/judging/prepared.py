"""A problem prepared for judging: the reference side, computed once and shared by every candidate
of that problem in a batch.

For one (problem, device, precision, size, seed set) it holds the plan of cases (the default
configuration over ``n_seeds`` input sets, every variant, and ``timing_sets`` input sets only the
timed calls see; with ``time_variants``, :data:`VARIANT_TIMING_SETS` more for each variant), the
reference's expected outputs (on the judge's GPU when it has one: the comparison runs there, and
the judge's host memory stays small), fingerprints of every input set and of the reference state
(the candidate's worker draws the same inputs and builds the same state itself, and proves it),
the eager baseline timed once over a rotation of the configuration's timed sets (and once per
variant, with ``time_variants``), the reference's compute ops, and the roofline bound. The
baselines and the profile go through the reference store (:mod:`.reference_store`): measured once
per key (problem source, precision, configuration, device, software, timing options) and reused
by later batches and processes, on CUDA devices by default.

Seeds are drawn fresh for each prepared problem (each batch) unless given; the candidate's worker
learns the checked sets' seeds only inside its own sandbox, where it draws them before any
candidate code runs. A candidate's timed sets are its worker's own: each drawn at its first timed
call from a seed the worker takes from the OS then, and drawn again here from the reported seed
(:meth:`PreparedProblem.timed_case`) for the re-check; the baseline's timed sets are the plan's.
Nothing here ever enters a candidate's process (threat #4, #15).
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from functools import partial

import torch

from . import modes, reference_store, tf32
from ..scoring import protocols
from ..measure import host_speed, profiling
from ..suite import baselines_store, devices, roofline, variants
from ..suite.problem_checks import degenerate_reasons
from ..suite.problems import Config, Problem, ProblemError
from ..core.provenance import device_name
from ..suite.reference import Case, build_reference, in_mode, make_case, make_inputs, set_flags, upstream_grads
from ..measure.tensors import TOLERANCE, nbytes, require_grad
from ..measure.timing import Timing, time_callable
from ..measure.timing_summary import host_bound
from .plan import VARIANT_TIMING_SETS, CaseSpec, fit_checked_sets, in_training_mode, plan_cases, timed_groups
from .reference_models import ReferenceModels

DEVICE_SHARE = 0.25  # expected outputs stay on the GPU while they take at most this share of its memory


@dataclass
class PreparedProblem:
    problem: Problem
    device: str
    precision: str
    small: bool
    seed: int
    specs: list[CaseSpec]
    cases: list[Case]
    flags: list[str] = field(default_factory=list)  # about the task itself (degenerate_task)
    notes: list[str] = field(default_factory=list)
    sol_ms: float | None = None
    expected_on_device: bool = False
    prepare_s: float = 0.0
    variants_declared: list = field(default_factory=list)
    variants_derived: list = field(default_factory=list)
    _model: object = None
    _baseline: Timing | None = None
    _baseline_error: str | None = None
    _variant_baselines: dict = field(default_factory=dict)  # config name -> Timing
    _ref_ops: dict | None = None
    _compile_ms: dict = field(default_factory=dict)
    _variant_sol: dict = field(default_factory=dict)  # config name -> speed-of-light ms (or None)
    _timed_models: dict = field(default_factory=dict)  # config name -> (reference model, init inputs) (timed_case)
    _tf32_tol: dict = field(default_factory=dict)  # (config name, numerics) -> the reference's own error (reference_error)
    # the reference store (reference_store.py) in use for this problem: set by prepare() from
    # JudgeOptions.reference_store and the device; off for a PreparedProblem made any other way
    use_store: bool = False
    # measurements read from the store rather than made here ("baseline", "variant:<config>",
    # "profile") -> seconds the read took
    stored: dict = field(default_factory=dict)
    # whether the reference depends on ``training`` (kbench_lib.judging.modes): where it does, the
    # plan checks the default's eval configuration
    modes: modes.ModeProbe | None = None

    @property
    def timed(self) -> list[bool]:
        return [s.timed for s in self.specs]

    @property
    def tolerance(self) -> float:
        return TOLERANCE[self.precision]

    @property
    def timing_groups(self) -> list[tuple[str, list[int], list[int]]]:
        """:func:`timed_groups` of the plan: the default configuration, then any timed variant."""
        return timed_groups(self.specs)

    @property
    def timed_variants(self) -> list[tuple[str, list[int], list[int]]]:
        """The variants with timed sets of their own (``time_variants``)."""
        return self.timing_groups[1:]

    def job_cases(self) -> list[dict]:
        """What the candidate's worker is told about each case: how to draw its inputs and build
        the reference state, never what the outputs should be."""
        return [
            # a timed set's seed is the worker's own, drawn from the OS at its first timed call: a seed
            # known in advance lets the candidate draw the set and answer it off the clock
            {"config": s.config.name, "overrides": s.config.overrides, "init_seed": s.init_seed,
             "input_seed": None if s.timed else s.input_seed, "timed": s.timed, "grad_output": c.grad_output}
            for s, c in zip(self.specs, self.cases)
        ]

    def timed_case(self, index: int, seed: int) -> Case:
        """The judge's own case for timed set ``index`` as the worker drew it, with its own ``seed``
        (reported after the timed calls): inputs' fingerprints and expected outputs, from the
        configuration's reference model, built once."""
        s = self.specs[index]
        reference = self._timed_models.get(s.config.name)
        if reference is None:
            first = next(i for i, x in enumerate(self.specs) if x.timed)
            model = self.reference_model() if s.config.name == self.specs[first].config.name else self._variant_model(index)
            reference = self._timed_models[s.config.name] = (model, self.cases[index].init_inputs)
        # the state as built, fingerprinted when the plan's case of this set was made (same model and init seed)
        return make_case(self.problem, s.config, s.init_seed, seed, self.device, self.precision,
                         keep_on_device=self.expected_on_device, reference=reference, state_sums=self.cases[index].state_sums)

    def reference_error(self, config: str, numerics: str) -> float | None:
        """``tol_needed`` of the reference run in ``numerics`` (TF32, or fp16 or bf16 under autocast:
        :func:`kbench_lib.judging.tf32.reference_error`), against its fp32 outputs, on the first
        checked set of ``config``, measured once; None where it does not apply or could not be
        measured."""
        key = (config, numerics)
        if key not in self._tf32_tol:
            i = next((k for k, s in enumerate(self.specs) if s.config.name == config and not s.timed), None)
            value = None
            if i is not None:
                try:
                    value = tf32.reference_error(self.problem, self.specs[i], self.cases[i].expected, self.device, self.precision, numerics)
                except Exception as e:  # noqa: BLE001 - the reference ran before; a failure here only loses the explanation
                    self.notes.append(f"the reference's {numerics} error on {config} could not be measured: {type(e).__name__}: {str(e)[:200]}")
            self._tf32_tol[key] = value
        return self._tf32_tol[key]

    def reference_model(self):
        """The reference model of the timed configuration, built once."""
        if self._model is None:
            first = next(s for s in self.specs if s.timed) if any(self.timed) else self.specs[0]
            self._model = build_reference(self.problem, first.config, first.init_seed, first.input_seed, self.device, self.precision)[0]
        return self._model

    def _inputs(self, spec: CaseSpec) -> list:
        """The input set of ``spec``, drawn again (cheaper on the device than keeping it)."""
        return make_inputs(self.problem, spec.config, spec.input_seed, self.precision, self.device)

    def reference_profile(self) -> dict:
        """The profile of the reference's forward on the first timed input set (the first checked
        one where nothing is timed) (:func:`kbench_lib.measure.profiling.profile_call`: compute ops, kernels)."""
        if self._ref_ops is None:
            spec = next((s for s in self.specs if s.timed), self.specs[0])

            def measure():
                with torch.no_grad(), in_mode(self.reference_model(), spec.config.mode):
                    return profiling.profile_call(self.reference_model(), self._inputs(spec), self.device, one_thread=True)

            self._ref_ops = self._through_store("profile", lambda: self._store_key("profile", spec.config), measure,
                                                lambda d: d, reference_store.decode_profile)
        return self._ref_ops

    def reference_ops(self) -> dict:
        """The compute ops of the reference's forward on the first timed input set."""
        return self.reference_profile()["ops"]

    def baseline(self, opts) -> Timing:
        """The eager baseline over the plan's timed sets of the default configuration (the same
        configuration and count the candidate is timed on, other data), measured once (or read from
        the reference store: :mod:`kbench_lib.judging.reference_store`)."""
        if self._baseline is None:
            self._baseline = self._stored_timing("baseline", opts, None)
        return self._baseline

    def measure_now(self, opts, cancel=None) -> dict[str, float]:
        """Everything the judge itself measures on the device for this problem, done now, once:
        the eager baseline (and each timed variant's, and torch.compile's where asked for) and the
        reference's profile. A batch that overlaps candidates calls this while no worker runs, so
        that no measurement of the reference shares the GPU with a candidate; judging one
        candidate at a time measures them lazily, as the first candidate needs them, and a batch
        whose fork server still starts measures them ahead (:meth:`kbench_lib.batch.local_batch._Batch.prepare_ahead`).
        ``cancel`` is asked before each measurement; once it says so, the rest is left to be
        measured when it is needed. Returns the seconds each measurement made here took
        (``profile``, ``baseline``, ``variant:<config>``, ``compile``), with the eager baseline's
        phases as ``baseline.<phase>`` (:attr:`kbench_lib.measure.timing.Timing.phase_s`); a measurement read
        from the reference store instead is also reported as ``<name>.stored`` (the seconds of the
        read), without phases."""
        took: dict[str, float] = {}
        for name, done, step in self._measurements(opts):
            if done:
                continue
            if cancel is not None and cancel():
                break
            t0 = time.monotonic()
            result = step()
            took[name] = round(time.monotonic() - t0, 3)
            if name in self.stored:
                took[f"{name}.stored"] = self.stored[name]
            elif name == "baseline":
                took.update({f"baseline.{k}": v for k, v in result.phase_s.items()})
        return took

    def measured(self, opts) -> bool:
        """Whether every measurement :meth:`measure_now` would make is made."""
        return all(done for _, done, _ in self._measurements(opts))

    def _measurements(self, opts) -> list[tuple]:
        """(name, whether it is made, what makes it) of each measurement the judge makes of this
        problem itself under ``opts`` (none for a problem with no timed case)."""
        if not any(self.timed):
            return []
        out = [("profile", self._ref_ops is not None, self.reference_profile)] if opts.guards else []
        if opts.timing:
            out.append(("baseline", self._baseline is not None, partial(self.baseline, opts)))
            out += [(f"variant:{name}", name in self._variant_baselines, partial(self.variant_baseline, name, opts))
                    for name, _, _ in self.timed_variants]
            out.append(("compile", "ms" in self._compile_ms, partial(self.compile_baseline_ms, opts)))
        return out

    def variant_baseline(self, config: str, opts) -> Timing:
        """The eager baseline on one variant's timed sets (``time_variants``), measured once (or
        read from the reference store)."""
        if config not in self._variant_baselines:
            self._variant_baselines[config] = self._stored_timing(f"variant:{config}", opts, config)
        return self._variant_baselines[config]

    def _stored_timing(self, name: str, opts, config: str | None) -> Timing:
        """The eager baseline on ``config``'s timed sets (:meth:`_time_reference`), read from the
        reference store where it holds one for this key, else measured (and stored)."""
        def key() -> dict:
            groups = timed_groups(self.specs)
            _, timed, warm = next(g for g in groups if g[0] == config) if config else groups[0]
            spec = self.specs[timed[0]]
            return {**self._store_key("eager", spec.config), "timed_sets": len(timed), "warm_sets": len(warm),
                    "options": reference_store.timing_key(opts)}

        measure = partial(self._time_reference, opts, config=config)
        return self._through_store(name, key, measure, reference_store.encode_timing, reference_store.decode_timing,
                                   keep=_keepable, again=partial(self._timed_at_full_speed, name, measure))

    def _timed_at_full_speed(self, name: str, measure, first: Timing) -> Timing:
        """A host-bound baseline the store may not keep (``first`` was timed while the host ran
        slow), timed once more (the timing moves to a CPU at full speed: :func:`time_cuda`'s
        ``full_speed_ms``); of the two, the one timed on the faster host. Without this a batch that
        met a slow spell would leave the baseline to every later batch to measure again (a
        host-bound level-3 baseline takes 4-9 s at a 1 s budget). Not where the judge does not know
        its host's full speed yet."""
        if host_speed.learn_full_speed() is None:
            self.notes.append(f"reference store: {name} not timed again: the judge has not probed its host enough to know its full speed")
            return first
        second = measure()
        self.notes.append(f"reference store: {name} timed again, its first timing on a slow host "
                          f"(probe {first.host_probe_ms} ms, then {second.host_probe_ms} ms)")
        return second if (second.host_probe_ms or float("inf")) <= (first.host_probe_ms or float("inf")) else first

    def _store_key(self, kind: str, config: Config) -> dict:
        return reference_store.base_key(kind, self.problem, self.device, self.precision, self.small, config)

    def _through_store(self, name: str, key, measure, encode, decode, keep=None, again=None):
        """``measure()``'s result, or the reference store's entry under ``key()`` where it holds a
        valid one (recorded in :attr:`stored`); a measured result is stored, and returned as it
        reads back from the store (the same value a later read gives), unless ``keep(result)`` says
        it is not a property of the key alone (then ``again(result)``, where given, may measure it
        once more; one still not kept is measured again by the next batch)."""
        if not self.use_store:
            return measure()
        try:
            k = key()
        except Exception as e:  # noqa: BLE001 - what the key needs could not be read: measured, not stored
            self.notes.append(f"reference store not used for {name}: {type(e).__name__}: {str(e)[:200]}")
            return measure()
        t0 = time.monotonic()
        value = decode(reference_store.lookup(k))
        if value is not None:
            self.stored[name] = round(time.monotonic() - t0, 3)
            return value
        t0 = time.monotonic()
        value = measure()
        if keep is not None and again is not None and not keep(value):
            value = again(value)
        if keep is not None and not keep(value):
            self.notes.append(f"reference store: {name} not kept (host-bound, and not timed at the host's full speed: "
                              "measured again in the next batch)")
            return value
        encoded = encode(value)
        reference_store.remember(k, encoded, time.monotonic() - t0)
        again = decode(reference_store.roundtrip(encoded))
        return again if again is not None else value

    def compile_baseline_ms(self, opts) -> float | None:
        """torch.compile's time: the stored baseline for this device, else (``compile_baseline``)
        measured once here."""
        if "ms" not in self._compile_ms:
            ms = baselines_store.lookup_compile_ms(self.problem, self.device, opts)
            if ms is None and opts.compile_baseline:
                try:
                    ms = self._time_reference(opts, compile_model=True).median_ms
                except Exception as e:  # noqa: BLE001 - compile may fail on some problems
                    self.notes.append(f"torch.compile baseline failed: {type(e).__name__}: {str(e)[:200]}")
            self._compile_ms["ms"] = ms
        return self._compile_ms["ms"]

    def _time_reference(self, opts, compile_model: bool = False, config: str | None = None) -> Timing:
        """The reference timed on ``config``'s timed sets (default: the default configuration's),
        warmed up on its checked sets, as the worker times the candidate."""
        groups = timed_groups(self.specs)
        name, timed, warm = next(g for g in groups if g[0] == config) if config else groups[0]
        model = self.reference_model() if name == groups[0][0] else self._variant_model(timed[0])
        if compile_model:
            model = torch.compile(model)
        sets, warm_sets = self._timing_sets(timed), self._timing_sets(warm)
        call = _backward_call(model) if self.problem.task == "backward" else _forward_call(model)
        set_flags()
        threads = torch.get_num_threads()
        if self.device == "cpu":
            torch.set_num_threads(1)  # as the candidate is timed on the CPU
        try:
            with in_mode(model, self.specs[timed[0]].config.mode):  # eval under a protocol that times in eval mode
                return time_callable(
                    call, sets, self.device, warmup_ms=opts.warmup_ms, min_trials=opts.min_trials, max_trials=opts.max_trials,
                    budget_s=opts.timing_budget_s, target_rse=opts.target_rse, warmup_sets=warm_sets or None, one_thread=True,
                    full_speed_ms=host_speed.learn_full_speed() if self.device.startswith("cuda") else None,
                )
        finally:
            torch.set_num_threads(threads)

    def _variant_model(self, index: int):
        s = self.specs[index]
        return build_reference(self.problem, s.config, s.init_seed, s.input_seed, self.device, self.precision)[0]

    def _timing_sets(self, indices: list[int]) -> list[list]:
        """The input sets of these cases, drawn again; for a backward task each carries its
        upstream gradient as its last element."""
        out = []
        for i in indices:
            inputs = self._inputs(self.specs[i])
            if self.problem.task == "backward":
                require_grad(inputs)
                inputs.append(upstream_grads(self.cases[i].grad_output, self.specs[i].input_seed, self.device))
            out.append(inputs)
        return out

    def variant_sol_ms(self, config: str) -> float | None:
        """The roofline bound of a variant on this device (None off the GPU or where the FLOP
        counter cannot trace it), counted once per prepared problem."""
        if config not in self._variant_sol:
            sol = None
            if self.device.startswith("cuda"):
                cfg = next(s.config for s in self.specs if s.config.name == config)
                try:
                    sol = self.sol_ms_on(cfg, device_name(self.device))
                except Exception as e:  # noqa: BLE001 - no bound, as for the default configuration
                    self.notes.append(f"no roofline bound for {config}: {type(e).__name__}: {str(e)[:200]}")
            self._variant_sol[config] = sol
        return self._variant_sol[config]

    def sol_ms_on(self, config: Config, name: str) -> float | None:
        """The roofline bound of ``config`` on the device called ``name`` (None for a device without
        a spec). Its FLOP and byte count goes through the reference store: counting runs the model
        under the FLOP counter, on the meta device or, for operators the meta device lacks
        (recurrent layers), for real on the CPU: 2-4 s for a level-3 LSTM or GRU in every batch."""
        if devices.spec_for(name) is None:
            return None
        c = self._through_store(f"count:{config.name}", lambda: reference_store.count_key(self.problem, self.precision, self.small, config),
                                lambda: roofline.count_at(self.problem, config.overrides, self.precision),
                                lambda d: d, reference_store.decode_count)
        return roofline.bound_ms(c, name, self.precision)

    def held_bytes(self) -> dict:
        """Bytes this problem holds, {"device": ..., "host": ...}: expected outputs and gradients
        where they are kept, and the reference model's parameters and buffers once built."""
        held = {"device": 0, "host": 0}

        def add(obj):
            if isinstance(obj, torch.Tensor):
                held["device" if obj.is_cuda else "host"] += obj.numel() * obj.element_size()
            elif isinstance(obj, (list, tuple)):
                for o in obj:
                    add(o)
            elif isinstance(obj, dict):
                for o in obj.values():
                    add(o)

        for c in self.cases:
            add([c.expected, c.expected_input_grads, c.expected_param_grads])
        if isinstance(self._model, torch.nn.Module):
            add([*self._model.parameters(), *self._model.buffers()])
        return held

    def release(self) -> None:
        """Frees what this problem holds on the device (the next problem's turn)."""
        self.cases.clear()
        self._model = None
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()


def _keepable(t: Timing) -> bool:
    """Whether an eager baseline may be kept in the reference store: always where it is not
    host-bound (:func:`kbench_lib.measure.timing_summary.host_bound`); a host-bound one only where
    it was timed at the host's full speed (:func:`kbench_lib.measure.host_speed.at_full_speed`).
    A host-bound time also holds the host's speed at that moment, and a stored one carries that
    moment into every later batch: a baseline stored from a slow spell makes the eager model itself,
    judged as a candidate at the host's usual speed, read as a 1.3x speedup in every batch that reads
    it. At full speed that moment is the host's usual best, the same in every batch; any
    other is measured again in the next batch, until one times it at full speed."""
    return not host_bound(t) or host_speed.at_full_speed(t.host_probe_ms)


def _forward_call(model):
    def call(*inputs):
        with torch.no_grad():
            return model(*inputs)
    return call


def _backward_call(model):
    def call(*args):
        model.zero_grad(set_to_none=True)
        out = model(*args[:-1])
        torch.autograd.backward(list(out) if isinstance(out, (list, tuple)) else [out], args[-1])
        return out
    return call


def _fits_on_device(device: str, need: int) -> bool:
    if not device.startswith("cuda"):
        return False
    free, total = torch.cuda.mem_get_info(torch.device(device))
    return need <= DEVICE_SHARE * total and need < free // 2


class PreparationCancelled(Exception):
    """A preparation given up at a case's boundary (its ``cancel`` said so): nothing of it is kept."""


def _expected_to_cpu(cases: list[Case]) -> None:
    """Moves the cases' expected outputs and gradients to the CPU (a preparation too large to keep
    on the GPU)."""
    for c in cases:
        c.expected = [e.cpu() if isinstance(e, torch.Tensor) else e for e in c.expected]
        c.expected_input_grads = [g.cpu() if isinstance(g, torch.Tensor) else g for g in c.expected_input_grads]
        c.expected_param_grads = {k: g.cpu() for k, g in c.expected_param_grads.items()}


def _timed_sets_as_shapes(cases: list[Case], specs: list[CaseSpec]) -> None:
    """The timed sets' expected outputs and gradients kept as shapes only (on the meta device), their
    memory given back. A timed set of the plan serves the baseline and, through its expected
    outputs, the sizes of a candidate's timing record only: a candidate's timed sets are its
    worker's own, drawn again per verdict (timed_case)."""
    def meta(t):
        return torch.empty_like(t, device="meta") if isinstance(t, torch.Tensor) else t

    for c, s in zip(cases, specs):
        if s.timed:
            c.expected = [meta(e) for e in c.expected]
            c.expected_input_grads = [meta(g) for g in c.expected_input_grads]
            c.expected_param_grads = {k: meta(g) for k, g in c.expected_param_grads.items()}


def prepare(problem: Problem, device: str, opts, small: bool, seed: int | None = None, cancel=None) -> PreparedProblem:
    """Runs the reference on every case of a fresh seed set (raises ProblemError when it cannot).
    ``cancel()``, asked before each case, gives the preparation up (:class:`PreparationCancelled`):
    a judging thread preparing ahead while its fork server starts stops once the server is ready,
    rather than keep its first worker waiting (a large problem's reference can take seconds to
    prepare)."""
    started = time.monotonic()
    base = seed if seed is not None else secrets.randbits(30)
    per_variant = VARIANT_TIMING_SETS if opts.timing and getattr(opts, "time_variants", False) else 0
    plan = partial(plan_cases, problem, base, small, opts.n_seeds, opts.variant_seeds, opts.timing_sets if opts.timing else 0,
                   device, per_variant, timed_mode=protocols.timed_mode(getattr(opts, "protocol", None)))
    backward = problem.task == "backward"
    specs = plan(eval_sets=0 if backward else opts.n_seeds)
    found = modes.ModeProbe(False, None, modes.BACKWARD) if backward else None
    on_device = device.startswith("cuda")
    cases: list[Case] = []
    fit_notes: list[str] = []
    try:
        first_timed = next((s for s in specs if s.timed), None)
        models = ReferenceModels(problem, device, opts.precision, specs,
                              keep=(first_timed.config.name, first_timed.init_seed) if first_timed else None)
        i = 0
        while i < len(specs):
            s = specs[i]
            if cancel is not None and cancel():
                raise PreparationCancelled(problem.key)
            reference = models.get(s.config, s.init_seed)
            probing = found is None and s.config.mode == "eval" and not s.timed
            try:
                case = make_case(problem, s.config, s.init_seed, s.input_seed, device, opts.precision, keep_on_device=on_device,
                                 reference=reference, state_sums=models.state_sums(s.config, s.init_seed))
            except Exception as e:  # noqa: BLE001 - in eval mode: judged in training mode only (else raised below)
                if not probing:
                    raise
                found = modes.raised(e)
                specs = in_training_mode(specs)
                continue
            if probing:
                # the first eval set has the default's first set's seeds: whether the reference depends on training
                found = modes.compare(cases[0].expected, case.expected, device)
                if not found.dependent:  # the default configuration stands for its eval configuration
                    specs = [x for x in specs if x.timed or x.config.mode != "eval"]
                    continue
            cases.append(case)
            if len(cases) == 1:
                fitted, note = fit_checked_sets(problem, case, specs)
                if note:
                    models.left_out([x for x in specs if x not in fitted])
                    specs, fit_notes = fitted, [note]
            i += 1
            if on_device and not _fits_on_device(device, sum(nbytes(c.expected) for c in cases)):
                on_device = False  # too large to keep on the GPU: this and every later case on the CPU
                _expected_to_cpu(cases)
    except (ProblemError, PreparationCancelled):
        raise
    except Exception as e:  # noqa: BLE001 - the reference failing is the problem's fault, not a candidate's
        raise ProblemError(f"reference model of {problem.key} failed: {type(e).__name__}: {e}") from e
    p = PreparedProblem(problem, device, opts.precision, small, base, specs, cases, expected_on_device=on_device,
                        use_store=reference_store.enabled(getattr(opts, "reference_store", None), device),
                        modes=found or modes.ModeProbe(False, None, modes.NOT_PLANNED))
    p._model = models.kept()  # the timed configuration's model, as reference_model() would build it again
    p.variants_declared, p.variants_derived, dropped = variants.split(problem, small, device)
    p.notes.extend(dropped + fit_notes)
    if opts.guards:
        # a task that a constant or an input-free answer passes cannot tell kernels apart (threat #6)
        other = next((c for c in cases[1:] if c.config == cases[0].config), None)
        for reason in degenerate_reasons(cases[0].expected, other.expected if other else None, p.tolerance):
            p.flags.append(f"degenerate_task: {reason}")
    _timed_sets_as_shapes(cases, specs)
    if device.startswith("cuda"):
        try:
            p.sol_ms = p.sol_ms_on(problem.declared_configs(small=small)[0], device_name(device))
        except Exception as e:  # noqa: BLE001 - a problem the FLOP counter cannot trace has no bound
            p.notes.append(f"no roofline bound: {type(e).__name__}: {str(e)[:200]}")
    p.prepare_s = time.monotonic() - started
    return p
