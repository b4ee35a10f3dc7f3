"""The reference side of a judgement: build the problem's Model and inputs for a configuration and
seed, run it, and keep what the candidate must reproduce.

This runs in the judge's own process and never in the candidate's: expected outputs must not
exist where untrusted code could find them (THREATS.md #4, #15).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .problems import Config, Problem, instantiate
from .tensors import cast_floating, clone_tensors, dtype_of, require_grad, to_device


@dataclass
class Case:
    """One (configuration, seed) pair: what the candidate receives and what it must return."""

    config: str
    init_seed: int  # seeds the model's construction (both Model and ModelNew)
    input_seed: int  # seeds get_inputs()
    init_inputs: list
    state_dict: dict  # reference parameters and buffers, on the CPU
    inputs: list  # on the CPU, already in the run's precision
    grad_output: list | None = None  # backward tasks: fixed upstream gradients
    expected: list = field(default_factory=list)  # reference outputs, on the CPU
    expected_input_grads: list = field(default_factory=list)
    expected_param_grads: dict = field(default_factory=dict)


def set_flags() -> None:
    """Global numerics the judge owns: no TF32 anywhere, no cudnn autotuning (THREATS #16, #17)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.set_float32_matmul_precision("highest")


def build_reference(problem: Problem, config: Config, init_seed: int, input_seed: int, device: str, precision: str = "fp32"):
    """(model, init_inputs, inputs) for one configuration, seeded like KernelBench does."""
    ns = instantiate(problem, config.overrides)
    dtype = dtype_of(precision)
    torch.manual_seed(init_seed)
    init_inputs = list(ns["get_init_inputs"]())
    torch.manual_seed(init_seed)
    model = ns["Model"](*init_inputs)
    torch.manual_seed(input_seed)
    inputs = list(ns["get_inputs"]())
    model = model.to(device=device, dtype=dtype) if dtype != torch.float32 else model.to(device)
    inputs = cast_floating(inputs, dtype)
    return model, init_inputs, inputs


def make_inputs(problem: Problem, config: Config, input_seed: int, precision: str = "fp32") -> list:
    """The problem's inputs for one configuration and seed, on the CPU, in the run's precision."""
    ns = instantiate(problem, config.overrides)
    torch.manual_seed(input_seed)
    return cast_floating(list(ns["get_inputs"]()), dtype_of(precision))


def make_case(problem: Problem, config: Config, init_seed: int, input_seed: int, device: str, precision: str = "fp32") -> Case:
    set_flags()
    model, init_inputs, inputs = build_reference(problem, config, init_seed, input_seed, device, precision)
    case = Case(
        config=config.name,
        init_seed=init_seed,
        input_seed=input_seed,
        init_inputs=init_inputs,
        state_dict={k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        inputs=clone_tensors(inputs),
    )
    dev_inputs = to_device(inputs, device)
    backward = problem.task == "backward"
    if backward:
        require_grad(dev_inputs)
        out = model(*dev_inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        gen = torch.Generator().manual_seed(input_seed + 7)
        grads = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype) for o in outs]
        torch.autograd.backward(outs, [g.to(device) for g in grads])
        case.grad_output = grads
        case.expected_input_grads = [
            (t.grad.detach().cpu() if t.grad is not None else None) if isinstance(t, torch.Tensor) and t.is_floating_point() else None
            for t in dev_inputs
        ]
        case.expected_param_grads = {
            n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None
        }
    else:
        with torch.no_grad():
            out = model(*dev_inputs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
    case.expected = [o.detach().cpu().clone() if isinstance(o, torch.Tensor) else o for o in outs]
    return case
