"""The reference side of a judgement: build the problem's Model and inputs for a configuration and
seed, run it, and keep what the candidate must reproduce.

This runs in the judge's own process and never in the candidate's: expected outputs must not
exist where untrusted code could find them (threat #4, #15).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch

from .problems import Config, Problem, instantiate
from ..core.seeding import SEEDED
from ..measure.compare import fingerprint
from ..measure.tensors import cast_floating, dtype_of, require_grad, to_device


@dataclass
class Case:
    """One (configuration, seed) pair: what the candidate receives and what it must return."""

    config: str
    init_seed: int  # seeds the model's construction (both Model and ModelNew)
    input_seed: int  # seeds get_inputs()
    init_inputs: list
    inputs: list  # fingerprints of the inputs (compare.fingerprint); non-tensor inputs as they are
    grad_output: list | None = None  # backward tasks: (shape, dtype) of each upstream gradient (upstream_grads)
    expected: list = field(default_factory=list)  # reference outputs (on the device or the CPU)
    expected_input_grads: list = field(default_factory=list)
    expected_param_grads: dict = field(default_factory=dict)
    state_sums: dict = field(default_factory=dict)  # state_fingerprint of the reference model


@contextlib.contextmanager
def in_mode(model, mode: str):
    """``model`` in ``mode`` ("train" or "eval") for what runs inside, its own mode restored after
    (the reference's model is shared by a configuration and its eval configuration)."""
    was = model.training
    model.train(mode != "eval")
    try:
        yield model
    finally:
        model.train(was)


def set_flags() -> None:
    """Global numerics the judge owns: no TF32 anywhere, no cudnn autotuning (threat #16, #17)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.set_float32_matmul_precision("highest")


def _seeded_inputs(ns: dict, input_seed: int, device: str) -> list:
    """``get_inputs()`` under ``input_seed``, with tensor factories creating on ``device``: on a GPU
    the inputs are drawn there (milliseconds, where drawing gigabytes on the CPU took seconds).
    The judge and the candidate's worker call this alike and compare fingerprints of the result."""
    with SEEDED:
        torch.manual_seed(input_seed)
        if device == "cpu":
            return list(ns["get_inputs"]())
        with torch.device(device):
            return to_device(list(ns["get_inputs"]()), device)


def draw_inputs(ns: dict, input_seed: int, precision: str, device: str) -> list:
    """The inputs of one set, from a namespace of the problem file (:func:`instantiate`), on
    ``device``, in the run's precision: what :func:`make_inputs` draws, for a caller that holds the
    namespace already (the worker instantiates its timed cases' before the candidate exists)."""
    return cast_floating(_seeded_inputs(ns, input_seed, device), dtype_of(precision))


def build_reference(problem: Problem, config: Config, init_seed: int, input_seed: int, device: str, precision: str = "fp32"):
    """(model, init_inputs, inputs) for one configuration: the model is built on the CPU after
    ``init_seed`` (as the candidate's ModelNew is, so one that creates its parameters in the same
    order gets the same values) and moved to ``device``; the inputs are drawn on ``device``."""
    ns = instantiate(problem, config.overrides)
    model, init_inputs = _seeded_model(ns, init_seed, precision)
    return model.to(device), init_inputs, draw_inputs(ns, input_seed, precision, device)


def build_model(problem: Problem, config: Config, init_seed: int, device: str, precision: str = "fp32"):
    """(model, init_inputs) for one configuration, built on the CPU after ``init_seed`` and moved
    to ``device``, as :func:`build_reference` builds them (without drawing inputs)."""
    model, init_inputs = _seeded_model(instantiate(problem, config.overrides), init_seed, precision)
    return model.to(device), init_inputs


def _seeded_model(ns: dict, init_seed: int, precision: str):
    """(model on the CPU in the run's precision, init_inputs), both made after ``init_seed``."""
    with SEEDED:
        torch.manual_seed(init_seed)
        init_inputs = list(ns["get_init_inputs"]())
        torch.manual_seed(init_seed)
        model = ns["Model"](*init_inputs)
    dtype = dtype_of(precision)
    return (model.to(dtype=dtype) if dtype != torch.float32 else model), init_inputs


def make_inputs(problem: Problem, config: Config, input_seed: int, precision: str = "fp32", device: str = "cpu") -> list:
    """The problem's inputs for one configuration and seed, on ``device``, in the run's precision."""
    return draw_inputs(instantiate(problem, config.overrides), input_seed, precision, device)


def reference_state(problem: Problem, config: Config, init_seed: int, precision: str = "fp32") -> tuple[list, dict]:
    """(init_inputs, state_dict on the CPU) of the reference model built after ``init_seed``: what
    the candidate's ModelNew is given and loaded with."""
    model, init_inputs = _seeded_model(instantiate(problem, config.overrides), init_seed, precision)
    return init_inputs, {k: v.detach() for k, v in model.state_dict().items()}


def upstream_grads(outputs: list, seed: int, device: str) -> list:
    """The fixed random upstream gradients of a backward task, one per output (same shape and
    dtype), drawn on ``device`` from their own generator: judge and worker draw the same ones."""
    gen = torch.Generator(device=device).manual_seed(seed + 7)
    return [torch.randn(tuple(shape), generator=gen, dtype=torch.float32, device=device).to(_dtype(dt)) for shape, dt in outputs]


def _dtype(name) -> torch.dtype:
    return name if isinstance(name, torch.dtype) else getattr(torch, str(name).replace("torch.", ""))


def make_case(problem: Problem, config: Config, init_seed: int, input_seed: int, device: str, precision: str = "fp32",
              keep_on_device: bool = False, reference: tuple | None = None, state_sums: dict | None = None) -> Case:
    """Runs the reference on one configuration and seed. Expected outputs (and gradients) stay on
    ``device`` with ``keep_on_device``, else they are copied to the CPU; the inputs are not kept
    (their fingerprints are: the candidate's worker draws the same inputs itself). ``reference``:
    (model, init_inputs) built already for this configuration and init seed, run again on another
    input set (the judge's own draw of a candidate's timed sets). ``state_sums``: the fingerprints
    of that model's state where the caller has them already (:func:`state_fingerprint` of the same
    state: a model restored to its state as built); None: taken here, before the forward."""
    set_flags()
    if reference is None:
        model, init_inputs, inputs = build_reference(problem, config, init_seed, input_seed, device, precision)
    else:
        (model, init_inputs), inputs = reference, make_inputs(problem, config, input_seed, precision, device)
        model.zero_grad(set_to_none=True)  # a backward task's gradients are this set's alone
    # the state the candidate is loaded with, taken before the forward: a module in training mode
    # updates buffers as it runs (BatchNorm's running statistics), and the worker fingerprints the
    # state of a model that has not run
    if state_sums is None:
        state_sums = state_fingerprint(model.state_dict())
    keep = (lambda t: t.detach().clone()) if keep_on_device else (lambda t: t.detach().cpu().clone())
    case = Case(
        config=config.name,
        init_seed=init_seed,
        input_seed=input_seed,
        init_inputs=init_inputs,
        inputs=[fingerprint(t) if isinstance(t, torch.Tensor) else t for t in inputs],
    )
    dev_inputs = inputs
    backward = problem.task == "backward"
    with in_mode(model, config.mode):
        _run_case(case, model, dev_inputs, backward, input_seed, device, keep)
    case.state_sums = state_sums
    return case


def _run_case(case: Case, model, dev_inputs: list, backward: bool, input_seed: int, device: str, keep) -> None:
    """The reference's call on one input set: its outputs (and gradients) into ``case``."""
    if backward:
        require_grad(dev_inputs)
        out = model(*dev_inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        grads = upstream_grads([(o.shape, o.dtype) for o in outs], input_seed, device)
        torch.autograd.backward(outs, grads)
        case.grad_output = [(tuple(o.shape), str(o.dtype)) for o in outs]
        case.expected_input_grads = [
            (keep(t.grad) if t.grad is not None else None) if isinstance(t, torch.Tensor) and t.is_floating_point() else None
            for t in dev_inputs
        ]
        case.expected_param_grads = {n: keep(p.grad) for n, p in model.named_parameters() if p.grad is not None}
    else:
        with torch.no_grad():
            out = model(*dev_inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
    case.expected = [keep(o) if isinstance(o, torch.Tensor) else o for o in outs]


def state_fingerprint(state: dict) -> dict:
    """Fingerprints of a state_dict's tensors, by name (the worker proves it loads the same state)."""
    return {k: fingerprint(v)["sums"] for k, v in state.items() if isinstance(v, torch.Tensor)}
