"""Prompts: what a language model is asked, from a problem and a few switches.

A prompt is a system message and one user message made of blocks, in this order: the task and its
rules for the backend asked for, a worked example in that backend (``templates/example_*.py``
against ``templates/example_problem.py``; the tests judge each example correct), the
architecture's source, and the switchable blocks: shapes (the configurations the candidate is
checked on: robust-kbench found that shape information helps), precision, hardware (one row of the
roofline device table) and, for backward tasks, the gradient requirement.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

from ..suite.problems import Problem
from ..suite.devices import DEVICES, spec_for
from ..scoring.protocols import KBENCH_TOLERANCE
from ..core.candidates import BACKENDS

TEMPLATES = Path(__file__).resolve().parent / "templates"
ASKABLE = BACKENDS  # a model may be asked for any backend the judge knows
BACKEND_NAMES = {
    "cuda": "CUDA kernels",
    "triton": "Triton kernels",
    "cpp": "C++ functions for the CPU",
    "cute": "CuTe DSL kernels",
    "tilelang": "TileLang kernels",
    "torch": "PyTorch code",
}
BACKEND_RULES = {
    "cuda": "- Write CUDA C++ kernels and compile them with `torch.utils.cpp_extension.load_inline` (`cuda_sources` "
            "with the kernels and their host functions, `cpp_sources` with the host functions' declarations, `functions` "
            "naming them); launch on the current CUDA stream.",
    "triton": "- Write Triton kernels (`@triton.jit`) and launch them from `forward`; allocate outputs with PyTorch.",
    "cpp": "- Write C++ functions for the CPU and compile them with `torch.utils.cpp_extension.load_inline` "
           "(`cpp_sources` and `functions`; no CUDA).",
    "cute": "- Write kernels in NVIDIA's CuTe DSL (`import cutlass`, `import cutlass.cute as cute`): a `@cute.kernel` "
            "function launched from a `@cute.jit` host function. Compile once with `cute.compile` (at import, on tensors made "
            "with `cutlass.cute.runtime.make_fake_compact_tensor` and dynamic sizes from `cute.sym_int`, or once per shape), "
            "then call the compiled function from `forward` on tensors converted with `cutlass.cute.runtime.from_dlpack`; "
            "allocate outputs with PyTorch and launch on the current CUDA stream.",
    "tilelang": "- Write kernels in TileLang (`import tilelang`, `import tilelang.language as T`): a `@T.prim_func` with "
                "`T.Tensor` arguments whose body opens `with T.Kernel(...)`, compiled once with `tilelang.compile` (at import, "
                "with `T.dynamic` sizes, or once per shape) and called from `forward` on PyTorch tensors; allocate outputs with "
                "PyTorch.",
    "torch": "- Use PyTorch operations only, no custom kernels: restructure, fuse or simplify the computation.",
}
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class PromptOptions:
    """The switches of a prompt. ``hardware`` is a key of :data:`kbench_lib.suite.devices.DEVICES`
    (``h100-sxm``), a device name (``NVIDIA H100 80GB HBM3``) or None for no hardware block."""

    backend: str = "cuda"
    example: bool = True
    shapes: bool = True
    precision: str = "fp32"
    hardware: str | None = None
    small: bool = False  # list the SMALL configurations (the ones judged on a CPU) in the shapes block

    def __post_init__(self):
        if self.backend not in ASKABLE:
            raise ValueError(f"the prompt's backend must be one of {ASKABLE}, not {self.backend!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {tuple(PRECISIONS)}, not {self.precision!r}")


def _template(name: str) -> Template:
    return Template((TEMPLATES / name).read_text())


def example_source(backend: str) -> str | None:
    path = TEMPLATES / f"example_{backend}.py"
    return path.read_text() if path.exists() else None


def task_block(o: PromptOptions) -> str:
    return _template("task.txt").substitute(backend_name=BACKEND_NAMES[o.backend], backend_rules=BACKEND_RULES[o.backend]).strip()


def example_block(o: PromptOptions) -> str | None:
    solution = example_source(o.backend)
    if solution is None:
        return None
    reference = (TEMPLATES / "example_problem.py").read_text()
    return _template("example.txt").substitute(reference=reference.strip(), solution=solution.strip(), backend_name=BACKEND_NAMES[o.backend]).strip()


def shapes_block(problem: Problem, small: bool = False) -> str:
    lines = ["Your `ModelNew` is checked for correctness on every one of these configurations (module constants "
             "overridden before `get_inputs` and `get_init_inputs` are called); the first one is timed:"]
    for config in problem.configs(small):
        shown = ", ".join(f"{k}={v!r}" for k, v in config.overrides.items()) or "the constants as written in the file"
        lines.append(f"- {config.name}: {shown}")
    lines.append("Do not assume any size is fixed, divisible by a block size or a power of two unless every configuration says so.")
    return "\n".join(lines)


def precision_block(precision: str) -> str:
    return (f"Precision: floating inputs and parameters are {PRECISIONS[precision]}; outputs must match the original's "
            f"{PRECISIONS[precision]} results element by element (absolute and relative tolerance {KBENCH_TOLERANCE[precision]:g}). "
            "TF32 is off on both sides.")


def hardware_block(hardware: str) -> str | None:
    spec = DEVICES.get(hardware) or spec_for(hardware)
    if spec is None:
        return None
    return (f"Target hardware: {spec.name}, peak {spec.fp32_tflops:g} TFLOP/s fp32 (CUDA cores; TF32 off), "
            f"{spec.bf16_tflops:g} TFLOP/s dense bf16/fp16 on tensor cores, {spec.bandwidth_tbs:g} TB/s DRAM bandwidth.")


def backward_block() -> str:
    return ("This is a training task: the judge also compares the gradients of every floating input and every parameter "
            "under a random upstream gradient. `ModelNew` must support autograd: write the backward too (for example a "
            "`torch.autograd.Function` with custom forward and backward kernels).")


def user_message(problem: Problem, o: PromptOptions) -> str:
    blocks = [task_block(o)]
    if o.example:
        blocks.append(example_block(o))
    blocks.append(_template("architecture.txt").substitute(source=problem.source.strip()).strip())
    if o.shapes:
        blocks.append(shapes_block(problem, o.small))
    blocks.append(precision_block(o.precision))
    if o.hardware:
        blocks.append(hardware_block(o.hardware))
    if problem.task == "backward":
        blocks.append(backward_block())
    return "\n\n".join(b for b in blocks if b) + "\n"


def build_messages(problem: Problem, options: PromptOptions) -> list[dict]:
    """The chat messages for ``problem``: provider-neutral ``[{role, content}]``."""
    return [
        {"role": "system", "content": (TEMPLATES / "system.txt").read_text().strip()},
        {"role": "user", "content": user_message(problem, options)},
    ]
