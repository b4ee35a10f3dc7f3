"""The reference models of one preparation (:class:`ReferenceModels`): each (configuration, init
seed) built once and restored before each of its cases."""
from __future__ import annotations

from collections import Counter

import torch

from ..suite.problems import Problem
from ..suite.reference import build_model, state_fingerprint


class ReferenceModels:
    """The reference model of each (configuration, init seed) of one preparation, built once and
    handed to every case of it as built: its parameters and buffers restored before each (a
    module in training mode moves its buffers as it runs). Building a model means initialising
    its parameters on the CPU and copying them to the device: built anew for each case, a level-2
    GEMM problem's model (a 2304 x 32000 projection) takes 2-10 s to prepare. A case's inputs are
    drawn from a fresh namespace of the problem, as
    the candidate's worker draws them.

    ``keep``, (configuration name, init seed), names the model handed on once the cases are done
    (:meth:`kept`): the timed configuration's, which the eager baseline and the re-check of every
    candidate's timed sets run, and which was otherwise built a second time (a level-3 problem's
    model, tens of millions of parameters initialised on the CPU: 0.1-0.4 s a build)."""

    def __init__(self, problem: Problem, device: str, precision: str, specs: list, keep: tuple[str, int] | None = None):
        self.problem, self.device, self.precision = problem, device, precision
        self._built: dict[tuple[str, int], tuple] = {}
        # cases still to come per model; an eval configuration has a model of its own, built afresh as
        # the candidate's is: a module may keep state outside its state_dict (a recurrent cell's hidden
        # state) that its training configuration's cases moved
        self._uses = Counter((s.config.name, s.init_seed) for s in specs)
        self._keep = keep
        # each model's state fingerprints, taken as built: every case restores that state, so the
        # fingerprints are the same for all of them (a 70-million-parameter state, 12 cases: once, not 12 times)
        self._sums: dict[tuple[str, int], dict] = {}

    def get(self, config, init_seed: int) -> tuple:
        """(model, init_inputs) for the next case of ``config`` and ``init_seed``, as built after
        that seed; a model is let go with its last case (but the one to keep)."""
        key = (config.name, init_seed)
        self._uses[key] -= 1
        drop = self._uses[key] <= 0 and key != self._keep
        if key not in self._built:
            model, init_inputs = build_model(self.problem, config, init_seed, self.device, self.precision)
            self._sums[key] = state_fingerprint(model.state_dict())
            if not drop:
                self._built[key] = (model, init_inputs, {k: v.detach().clone() for k, v in model.state_dict().items()})
            return model, init_inputs
        model, init_inputs, pristine = self._built.pop(key) if drop else self._built[key]
        with torch.no_grad():
            model.load_state_dict(pristine)
        return model, init_inputs

    def left_out(self, specs: list) -> None:
        """Cases of the plan that will not come (left out of it): their models are let go with the
        last case that does."""
        for s in specs:
            key = (s.config.name, s.init_seed)
            self._uses[key] -= 1
            if self._uses[key] <= 0 and key != self._keep:
                self._built.pop(key, None)

    def state_sums(self, config, init_seed: int) -> dict | None:
        """The state fingerprints of the model of ``config`` and ``init_seed`` as built (None
        before :meth:`get` built it)."""
        return self._sums.get((config.name, init_seed))

    def kept(self):
        """The model named ``keep`` as built (its parameters and buffers restored), its pristine copy
        let go; None where no case used it."""
        entry = self._built.pop(self._keep, None) if self._keep is not None else None
        if entry is None:
            return None
        model, _, pristine = entry
        with torch.no_grad():
            model.load_state_dict(pristine)
        return model
