"""CHEAT #13 lying output: a torch.Tensor subclass whose comparisons always say 'equal' (allclose,
equal, eq, sub give agreement). No work is done. Caught by: outputs must be exactly torch.Tensor
(output_mismatch)."""
import torch
import torch.nn as nn


class _Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "isclose"):
            return True
        if name in ("eq", "__eq__", "isclose"):
            return torch.ones(args[0].shape, dtype=torch.bool)
        if name in ("sub", "__sub__"):
            return torch.zeros(args[0].shape)
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.zeros(a.shape).as_subclass(_Agreeable)
