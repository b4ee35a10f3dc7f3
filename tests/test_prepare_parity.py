"""A reference prepared with each configuration's model built once (kbench_lib.judging.reference_models.ReferenceModels)
gives bitwise what building a fresh model for every case gave: expected outputs and gradients,
inputs' and state's fingerprints, for every problem of the suite (benchmarks/prepare_parity.py does
the same from the command line, also at full size or on a GPU)."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from prepare_parity import differences, prepare_both  # noqa: E402

from kbench_lib.judging import reference_models  # noqa: E402
from kbench_lib.suite.problems import discover  # noqa: E402

PROBLEMS = {p.key: p for p in discover(REPO / "problems")}


def test_every_problem_of_the_suite_prepares_as_with_a_fresh_model_per_case():
    """All of them at their small shapes on the CPU (about 15 s on two cores): among them BatchNorm
    and InstanceNorm in training mode, backward tasks, and GEMMs whose models share one build over
    ten cases."""
    different, failed = {}, {}
    for key, problem in PROBLEMS.items():
        try:
            shared, fresh, _, _ = prepare_both(problem, "cpu", small=True)
        except Exception as e:  # noqa: BLE001 - reported below, with the others
            failed[key] = f"{type(e).__name__}: {e}"
            continue
        diff = differences(shared, fresh)
        if diff:
            different[key] = diff
    assert len(PROBLEMS) >= 266 and not failed and not different, (failed, different)


def test_without_restoring_its_state_a_training_mode_model_would_differ(monkeypatch):
    """The check can fail: a BatchNorm model in training mode run again without its buffers
    restored has moved its running statistics, and the state fingerprints of its later cases
    say so."""
    def unrestored(self, config, init_seed):
        key = (config.name, init_seed)
        if key not in self._built:
            self._built[key] = reference_models.build_model(self.problem, config, init_seed, self.device, self.precision)
        return self._built[key]

    def unrestored_kept(self):
        model, _ = self._built.get(self._keep, (None, None))
        return model

    monkeypatch.setattr(reference_models.ReferenceModels, "get", unrestored)
    monkeypatch.setattr(reference_models.ReferenceModels, "kept", unrestored_kept)
    shared, fresh, _, _ = prepare_both(PROBLEMS["level2/17_Gemm_BatchNorm_Hardtanh"], "cpu", small=True)
    diff = differences(shared, fresh)
    assert diff and all(d.endswith("state_sums") for d in diff[:-1]), diff
    assert diff[-1] == "the timed configuration's model (parameters and buffers)"  # its running statistics moved too
