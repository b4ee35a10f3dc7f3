"""A reference prepared with each configuration's model built once (kbench_lib.prepared._ModelsBuilt)
gives bitwise what building a fresh model for every case gave: expected outputs and gradients,
inputs' and state's fingerprints. Shown here on problems with training-mode buffers (BatchNorm,
InstanceNorm), a backward task and a GEMM; benchmarks/prepare_parity.py runs the whole suite."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from prepare_parity import differences, prepare_both  # noqa: E402

from kbench_lib import prepared as prepared_module  # noqa: E402
from kbench_lib.problems import discover  # noqa: E402

PROBLEMS = {p.key: p for p in discover(REPO / "problems")}
KEYS = ["level2/17_Gemm_BatchNorm_Hardtanh", "level1/64_InstanceNorm2d", "robust/4_LayerNorm_Backward",
        "level2/10_Gemm_Divide_Tanh_Scale_LogSoftmax"]


@pytest.mark.parametrize("key", KEYS)
def test_one_model_per_configuration_gives_what_a_fresh_model_per_case_gave(key):
    shared, fresh, _, _ = prepare_both(PROBLEMS[key], "cpu", small=True)
    assert len(shared.cases) > 2
    assert differences(shared, fresh) == []


def test_without_restoring_its_state_a_training_mode_model_would_differ(monkeypatch):
    """The check can fail: a BatchNorm model in training mode run again without its buffers
    restored has moved its running statistics, and the state fingerprints of its later cases
    say so."""
    def unrestored(self, config, init_seed):
        key = (config.name, init_seed)
        if key not in self._built:
            self._built[key] = prepared_module.build_model(self.problem, config, init_seed, self.device, self.precision)
        return self._built[key]

    monkeypatch.setattr(prepared_module._ModelsBuilt, "get", unrestored)
    shared, fresh, _, _ = prepare_both(PROBLEMS["level2/17_Gemm_BatchNorm_Hardtanh"], "cpu", small=True)
    diff = differences(shared, fresh)
    assert diff and all(d.endswith("state_sums") for d in diff), diff
