"""The correctness calls: every checked set of every configuration, each set's raw outputs (and
its inputs as the call left them; gradients on a backward task) written for the judge to compare.
The candidate's models are made here, one configuration and init seed at a time."""
from __future__ import annotations

import os

import torch

from ...measure.tensors import require_grad, to_device
from ...suite.problems import mode_of
from ...suite.reference import set_flags
from .probes import _context_usable, _settings
from .report import _failure_of, _LoadError, _trace
from .results import _check_output, _detach, _inputs_after, _Tensor, _write_tensors, poison_allocator


_Module = torch.nn.Module
_module_eval, _module_train, _module_modules = torch.nn.Module.eval, torch.nn.Module.train, torch.nn.Module.modules


class _ModelMaker:
    """``make_model(case)``: the candidate's model for a case's configuration and init seed, made
    with the reference's init inputs and seeded as the reference was, holding the reference's state
    where its names match, in the configuration's mode (``model.eval()``, the candidate's own
    method, for an eval configuration, as CUDA-L1's harness calls it); one model is kept at a time.
    ``notes[config]``: what the candidate did with ``training`` that a reader should know (it
    overrides ``eval()``, stays in training mode, puts itself in eval mode, or switches modes in
    its forward); the outputs alone decide correctness."""

    def __init__(self, ModelNew: type, device: torch.device, dtype: torch.dtype):
        self.ModelNew, self.device, self.dtype = ModelNew, device, dtype
        self.models: dict = {}
        self.notes: dict[str, str] = {}

    def __call__(self, case):
        key = (case["config"], case["init_seed"])
        if key in self.models:
            return self.models[key]
        torch.manual_seed(case["init_seed"])
        try:
            model = self.ModelNew(*case["init_inputs"])
        except TypeError as e:
            raise _LoadError(f"ModelNew(*init_inputs) failed: {e}") from e
        model = model.to(device=self.device, dtype=self.dtype) if self.dtype != torch.float32 else model.to(self.device)
        ref_state = case["state_dict"]
        own = model.state_dict()
        if set(own) == set(ref_state):
            try:
                model.load_state_dict(ref_state, strict=True)
            except RuntimeError as e:
                raise _LoadError(f"ModelNew's state_dict matches the reference's names but not its shapes: {e}") from e
        mode = mode_of(case["config"])
        if mode == "eval":
            model.eval()
        self._note(case["config"], _mode_note(model, mode))
        self.models.clear()
        self.models[key] = model
        return model

    @staticmethod
    def mode_now(model) -> str | None:
        """``train`` or ``eval``: the model's own ``training`` (None where it cannot be read)."""
        try:
            return "train" if _Module.__getattribute__(model, "training") else "eval"
        except Exception:  # noqa: BLE001 - an attribute the candidate broke: nothing to note
            return None

    def after_call(self, case, model, before: str | None) -> None:
        """Notes a model whose forward changed its mode (``before``: its mode before the call)."""
        now = self.mode_now(model)
        if before is not None and now is not None and now != before:
            self._note(case["config"], f"ModelNew switched itself to {now} mode in its forward "
                                       f"(its configuration runs in {mode_of(case['config'])} mode)")

    def _note(self, config: str, note: str | None) -> None:
        if note and note not in (self.notes.get(config) or ""):
            self.notes[config] = f"{self.notes[config]}; {note}" if config in self.notes else note


def _mode_note(model, mode: str) -> str | None:
    """What a reader should know of a freshly made model's mode, or None."""
    try:
        notes = []
        if mode == "eval" and (type(model).eval is not _module_eval or type(model).train is not _module_train):
            notes.append("ModelNew overrides eval() or train()")
        wrong = [m for m in _module_modules(model) if bool(m.training) != (mode == "train")]
        if wrong:
            where = "after eval()" if mode == "eval" else "as constructed (it put itself in eval mode)"
            notes.append(f"{len(wrong)} of ModelNew's modules in {'training' if mode == 'eval' else 'eval'} mode {where}")
        return "; ".join(notes) or None
    except Exception as e:  # noqa: BLE001 - the candidate's modules may be odd: say so, never fail on it
        return f"ModelNew's mode could not be read ({type(e).__name__})"


def _model_maker(ModelNew: type, device: torch.device, dtype: torch.dtype) -> _ModelMaker:
    return _ModelMaker(ModelNew, device, dtype)


def _settings_watch(settings: dict, flags: list[str]):
    """``check_settings(where)``: flags (once each) a global numerics setting changed since
    ``settings`` were read, and sets the judge's settings again."""

    def check_settings(where: str) -> None:
        now = _settings()
        if now != settings:
            changed = ", ".join(f"{k}: {settings[k]} -> {now[k]}" for k in settings if now[k] != settings[k])
            text = f"global_settings_changed: {changed} ({where})"
            if text not in flags:
                flags.append(text)
            set_flags()  # measure on the judge's settings regardless

    return check_settings


_STOPPED = object()  # _check_configs: a failure left the process unfit to check more


def _check_configs(cases, loaded, make_model, device, backward, outdir, chan, flags, check_settings, job):
    """Every checked set of every configuration, each set's record written to ``case_<i>.kbt``.
    A set that fails ends its configuration (its other sets are skipped: reported ``case_failed``)
    and the next configuration is checked, so that each configuration's result is known; a failure
    that leaves a CUDA context unusable stops the checks (``stopped``). Returns the names of the
    configurations that failed, or :data:`_STOPPED`."""
    failed: set = set()
    for i, meta in enumerate(cases):
        if meta.get("timed") or meta["config"] in failed:
            continue  # timing-only sets: never seen before the timed calls; a failed configuration is settled
        chan.send(event="stage", stage="correctness", case=i)
        failure = _check_one(i, loaded[i], make_model, device, backward, outdir, check_settings, flags, job.get("poison_bytes", 0))
        note = {"note": make_model.notes[meta["config"]]} if meta["config"] in getattr(make_model, "notes", {}) else {}
        if failure is None:
            chan.send(event="case_done", case=i, **note)
            continue
        category, message = failure
        failed.add(meta["config"])
        chan.send(event="case_failed", case=i, config=meta["config"], failure=category, message=f"[{meta['config']}] {message}", **note)
        if device.type == "cuda" and not _context_usable(device):
            chan.send(event="stopped", case=i, reason=f"the CUDA context was unusable after {meta['config']} failed ({category})")
            return _STOPPED
    return failed


def _check_one(i, case, make_model, device, backward, outdir, check_settings, flags, poison_bytes: int) -> tuple[str, str] | None:
    """One checked set's call: its record written, or (failure category, message)."""
    try:
        model = make_model(case)
        inputs = to_device(case["inputs"], device)
        if backward:
            require_grad(inputs)
        poison_allocator(device, poison_bytes)
        set_flags()
        before = make_model.mode_now(model) if hasattr(make_model, "mode_now") else None
        if backward:
            model.zero_grad(set_to_none=True)
            out = model(*inputs)
        else:
            with torch.no_grad():
                out = model(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if hasattr(make_model, "after_call"):
            make_model.after_call(case, model, before)
        check_settings("during a correctness call")
        outs, err, out_flags = _check_output(out, inputs)
        if err:
            return "output_mismatch", err
        flags.extend(f for f in out_flags if f not in flags)
        record = {"outputs": [_detach(o) for o in outs], "inputs_after": _inputs_after(inputs)}
        if backward:
            grads = case["grad_output"]
            if len(grads) != len(outs) or any(o.shape != g.shape for o, g in zip(outs, grads)):
                return "shape_mismatch", "output shapes differ from the reference's"
            torch.autograd.backward(outs, grads)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            record["input_grads"] = [
                (_detach(t.grad) if t.grad is not None else None) if isinstance(t, _Tensor) and t.is_floating_point() else None
                for t in inputs
            ]
            record["param_grads"] = {n: _detach(p.grad) for n, p in model.named_parameters() if p.grad is not None}
        _write_tensors(os.path.join(outdir, f"case_{i}.kbt"), record)
        return None
    except _LoadError as e:
        return "load_error", str(e)
    except BaseException as e:  # noqa: BLE001 - the candidate's call may raise anything
        if isinstance(e, SystemExit):
            return "crash", f"candidate called sys.exit({e.code})"
        return _failure_of(e), _trace(e)
