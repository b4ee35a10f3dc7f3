"""The correctness calls: every checked set of every configuration, each set's raw outputs (and
its inputs as the call left them; gradients on a backward task) written for the judge to compare.
The candidate's models are made here, one configuration and init seed at a time."""
from __future__ import annotations

import os

import torch

from ...measure.tensors import require_grad, to_device
from ...suite.reference import set_flags
from .probes import _context_usable, _settings
from .report import _failure_of, _LoadError, _trace
from .results import _check_output, _detach, _inputs_after, _Tensor, _write_tensors, poison_allocator


def _model_maker(ModelNew: type, device: torch.device, dtype: torch.dtype):
    """``make_model(case)``: the candidate's model for a case's configuration and init seed, made
    with the reference's init inputs and seeded as the reference was, holding the reference's state
    where its names match; one model is kept at a time."""
    models: dict = {}

    def make_model(case):
        key = (case["config"], case["init_seed"])
        if key in models:
            return models[key]
        torch.manual_seed(case["init_seed"])
        try:
            model = ModelNew(*case["init_inputs"])
        except TypeError as e:
            raise _LoadError(f"ModelNew(*init_inputs) failed: {e}") from e
        model = model.to(device=device, dtype=dtype) if dtype != torch.float32 else model.to(device)
        ref_state = case["state_dict"]
        own = model.state_dict()
        if set(own) == set(ref_state):
            try:
                model.load_state_dict(ref_state, strict=True)
            except RuntimeError as e:
                raise _LoadError(f"ModelNew's state_dict matches the reference's names but not its shapes: {e}") from e
        models.clear()
        models[key] = model
        return model

    return make_model


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
        if failure is None:
            chan.send(event="case_done", case=i)
            continue
        category, message = failure
        failed.add(meta["config"])
        chan.send(event="case_failed", case=i, config=meta["config"], failure=category, message=f"[{meta['config']}] {message}")
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
        if backward:
            model.zero_grad(set_to_none=True)
            out = model(*inputs)
        else:
            with torch.no_grad():
                out = model(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
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
