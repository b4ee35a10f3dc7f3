"""The one lock over torch's global random generators in a process.

Problems draw their inputs and weights from torch's global generators (``torch.manual_seed`` seeds
the CPU's and every GPU's), and the judge relies on a seed giving the same tensors in its process
and in the candidate's worker. A batch runs one judging thread per GPU, and a local model may
generate beside them, so every seeded draw in the judge's process holds :data:`SEEDED` from its
seed to its last tensor. Without it, two judging threads preparing references at once would draw
other inputs than their workers (a ``judge_error``: "not reproducible").
"""
from __future__ import annotations

import threading

SEEDED = threading.RLock()

__all__ = ["SEEDED"]
