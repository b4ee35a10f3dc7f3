"""Verdict records: an append-only parquet dataset with an explicit schema.

Layout: ``<root>/<run_id>/records/part-<ns>-<n>.parquet``, one small file per append, written to a
temporary name and renamed, so a killed batch loses nothing already judged. The schema only ever
gains columns: reading with :data:`SCHEMA` fills columns that older files lack with nulls.
"""
from __future__ import annotations

import datetime as _dt
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

MAX_ERROR_CHARS = 4000
MAX_SOURCE_CHARS = 200_000

# one device kernel of a profile (kbench_lib.measure.profiling.kernel_table)
KERNELS = pa.list_(pa.struct([("name", pa.string()), ("op", pa.string()), ("count", pa.int32()), ("device_us", pa.float64())]))

# one configuration of a judgement (kbench_lib.scoring.protocols: what each field means)
CONFIGS = pa.list_(pa.struct([
    ("config", pa.string()), ("kind", pa.string()), ("checked", pa.bool_()), ("passed", pa.bool_()), ("failure", pa.string()),
    ("hard_failure", pa.string()), ("message", pa.string()), ("reason", pa.string()), ("tol_needed", pa.float64()),
    ("max_abs_err", pa.float64()), ("ref_tf32_tol", pa.float64()), ("sets", pa.int32()),
    # the mode dimension (kbench_lib.judging.modes): the configuration's mode ("train", "eval"), the
    # configuration whose result stands for it where it was not checked itself, and what the
    # candidate did with ``training``; the reference's own errors under fp16 and bf16 autocast
    ("mode", pa.string()), ("follows", pa.string()), ("note", pa.string()),
    ("ref_fp16_tol", pa.float64()), ("ref_bf16_tol", pa.float64()),
]))
CONFIG_FIELDS = [f.name for f in CONFIGS.value_type]

SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("model", pa.string()),
        ("strategy", pa.string()),
        ("level", pa.string()),
        ("problem", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("sample", pa.int32()),
        ("turn", pa.int32()),
        ("backend", pa.string()),
        ("precision", pa.string()),
        ("device", pa.string()),
        ("device_name", pa.string()),
        ("small", pa.bool_()),
        ("compiled", pa.bool_()),
        ("correct", pa.bool_()),
        ("trusted", pa.bool_()),
        ("failure", pa.string()),
        ("flags", pa.list_(pa.string())),
        ("message", pa.string()),
        ("error", pa.string()),
        ("max_abs_err", pa.float64()),
        ("runtime_ms", pa.float64()),
        ("runtime_std_ms", pa.float64()),
        ("runtime_p10_ms", pa.float64()),
        ("runtime_p90_ms", pa.float64()),
        ("n_trials", pa.int32()),
        ("baseline_eager_ms", pa.float64()),
        ("baseline_compile_ms", pa.float64()),
        ("speedup_eager", pa.float64()),
        ("speedup_compile", pa.float64()),
        ("sol_ms", pa.float64()),
        ("n_kernels", pa.int32()),
        ("custom_kernel_share", pa.float64()),
        ("kernel_sha", pa.string()),
        ("seeds_checked", pa.int32()),
        ("variants_checked", pa.int32()),
        ("seed", pa.int64()),
        ("build_s", pa.float64()),
        ("build_cached", pa.bool_()),
        ("judge_s", pa.float64()),
        ("queue_s", pa.float64()),
        ("network_isolated", pa.bool_()),
        ("torch_version", pa.string()),
        ("cuda_version", pa.string()),
        ("triton_version", pa.string()),
        ("driver", pa.string()),
        ("git_sha", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("judge_stages", pa.map_(pa.string(), pa.float64())),  # seconds per stage of the judge (Verdict.stage_s)
        ("device_ms", pa.float64()),  # device-busy clock: kernel time of one call summed over streams (CUPTI)
        ("baseline_eager_device_ms", pa.float64()),
        ("timing_remeasured", pa.int32()),  # timed runs discarded as outliers and run again
        ("variants_declared", pa.list_(pa.string())),  # the problem's own variants in the judgement
        ("variants_derived", pa.list_(pa.string())),  # variants derived from its size constants (kbench_lib.suite.variants)
        # generation (language models; null for offline solvers): kbench_lib.generation.language_model
        ("prompt_sha", pa.string()),  # SHA-256 of the messages sent
        ("response_sha", pa.string()),  # SHA-256 of the response text
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),  # includes reasoning tokens where the provider counts them
        ("reasoning_tokens", pa.int64()),
        ("gen_latency_s", pa.float64()),  # seconds the request took when it was made (a replayed row keeps it)
        ("gen_cost_usd", pa.float64()),  # estimate from list prices (kbench_lib.generation.pricing); null if unknown
        ("gen_cached", pa.bool_()),  # the response came from the record/replay cache
        ("top_kernels", pa.map_(pa.string(), pa.float64())),  # the profiled forward's heaviest device kernels: share of device time
        # search strategies (kbench_lib.strategies; null for a plain batch)
        ("proposal", pa.int32()),  # order of the proposal in its problem's search, from 0
        ("proposal_id", pa.string()),  # e.g. "p7": unique within (run, model, problem)
        ("parent_ids", pa.list_(pa.string())),  # the proposals this one was made from (refined, mutated, crossed)
        ("operation", pa.string()),  # sample, refine, translate, mutate, crossover
        ("judged", pa.bool_()),  # False: a verifier rejected it and the judge never ran it (failure verifier_rejected)
        ("verify_decisions", pa.map_(pa.string(), pa.string())),  # verifier -> "pass" or "fail"
        ("verify_reasons", pa.string()),
        ("verify_prompt_tokens", pa.int64()),
        ("verify_completion_tokens", pa.int64()),
        ("knobs", pa.map_(pa.string(), pa.int64())),  # the offline tuner's constants for this candidate
        ("strategy_params", pa.string()),  # JSON of the strategy's parameters and budget
        # what one forward ran (kbench_lib.measure.profiling.profile_call), for the fusion analyses (kbench_lib.analysis.fusion);
        # null in records written before these columns and where no profile was taken (a failed candidate, guards off)
        ("profile_ops", pa.map_(pa.string(), pa.int32())),  # the candidate's lowest ATen compute ops: {name: count}
        ("profile_kernels", KERNELS),  # its device kernels, one entry per (name, launching ATen op; null: its own)
        ("reference_ops", pa.map_(pa.string(), pa.int32())),  # the same for the reference's forward
        ("reference_kernels", KERNELS),
        ("reference_n_kernels", pa.int32()),
        # what was judged, for the explorer (kbench_lib.analysis.sources); null in older records
        ("candidate_source", pa.string()),  # the candidate's source (cut to MAX_SOURCE_CHARS)
        ("problem_path", pa.string()),  # the problem file judged against
        # generalisation timing (JudgeOptions.time_variants; null without it): per variant name, over
        # never-seen input sets of that variant, for kbench_lib.analysis.scaling.variant_speedups
        ("variant_speedups", pa.map_(pa.string(), pa.float64())),  # eager baseline time / candidate time
        ("variant_runtime_ms", pa.map_(pa.string(), pa.float64())),  # the candidate's median
        ("variant_baseline_ms", pa.map_(pa.string(), pa.float64())),  # the eager baseline's median
        # protocols (kbench_lib.scoring.protocols): null in records written before them, which read as judged under kbench
        ("protocol", pa.string()),  # the protocol that decided ``correct``
        ("cause", pa.string()),  # why a rejection happened: shape_specialisation, reduced_precision, else the failure
        ("configs", CONFIGS),  # every configuration's result, whatever the protocol
        # the host's speed while each side was timed (kbench_lib.measure.host_speed: median ms of a fixed
        # pure-Python probe between timed calls; CUDA only, null in older records): host-bound times follow it
        ("host_probe_ms", pa.float64()),
        ("baseline_host_probe_ms", pa.float64()),
        # 1 where the candidate's reported run drifted between halves in step with the host's speed and
        # was kept rather than measured again (Timing.host_drift; CUDA only, null in older records)
        ("timing_host_drift", pa.int32()),
        # 1 where the candidate's timed calls ran pinned to another CPU, one at the host's full speed
        # (Timing.host_moved, kbench_lib.measure.host_speed.to_a_fast_cpu; CUDA only, null in older records)
        ("timing_host_moved", pa.int32()),
        # 1 where the candidate's run was run again on a CPU at the host's full speed, its host having
        # slowed during the first (Timing.host_retried; CUDA only, null in older records)
        ("timing_host_retried", pa.int32()),
        # a published claim about this kernel, where the candidate came from a corpus that makes one
        # (null elsewhere): the speedup claimed, who claimed it and on what ("cuda-l1:h100"), and
        # what it was claimed over ("eager" PyTorch, "torch.compile", ...)
        ("claim_speedup", pa.float64()),
        ("claim_source", pa.string()),
        ("claim_baseline", pa.string()),
        ("corpus_row", pa.string()),  # the corpus row the candidate came from ("h100.json:17": its file and line)
        # what the judge noted that does not decide trust: a host-bound time, variants it could not
        # derive, fewer checked sets than planned (a task too large to hold); empty in older records
        ("notes", pa.list_(pa.string())),
    ]
)


def truncate(text: str | None, limit: int = MAX_ERROR_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n[... {len(text) - limit} characters cut ...]\n" + text[-half:]


def _pairs(counts: dict | None):
    """A {name: count} dict as the (key, value) pairs of a parquet map column; None stays None."""
    return None if counts is None else sorted((str(k), int(n)) for k, n in counts.items())


def _variant_column(timings: dict | None, key: str):
    """One quantity of a verdict's ``variant_timings`` as map pairs; None where no variant has it
    (none was timed, or, for speedups, none was a kernel timing)."""
    pairs = sorted((str(name), float(t[key])) for name, t in (timings or {}).items() if t.get(key) is not None)
    return pairs or None


def _configs_column(configs: list | None):
    """A verdict's per-configuration results as the ``configs`` column (messages cut short,
    infinite numbers kept: parquet holds them)."""
    if not configs:
        return None
    out = []
    for c in configs:
        row = {k: c.get(k) for k in CONFIG_FIELDS}
        row["message"] = truncate(row["message"], 1000)
        for k in ("tol_needed", "max_abs_err", "ref_tf32_tol", "ref_fp16_tol", "ref_bf16_tol"):
            row[k] = None if row[k] is None else float(row[k])
        out.append(row)
    return out


def _environment_columns(env: dict) -> dict:
    """The columns of where a verdict was judged: library versions, driver, code version."""
    return {name: env.get(name) for name in ("torch_version", "cuda_version", "triton_version", "driver", "git_sha")}


def _profile_columns(v: dict) -> dict:
    """The columns of what ran: the candidate's heaviest kernels and profiled operators, and the
    reference's."""
    return {
        "top_kernels": [(str(k), float(share)) for k, share in (v.get("top_kernels") or [])] or None,
        "profile_ops": _pairs(v.get("profile_ops")),
        "profile_kernels": v.get("profile_kernels"),
        "reference_ops": _pairs(v.get("reference_ops")),
        "reference_kernels": v.get("reference_kernels"),
        "reference_n_kernels": v.get("reference_n_kernels"),
    }


def row_from_verdict(verdict, *, run_id: str, model: str, strategy: str = "single", sample: int = 0, turn: int = 0, tags=(),
                     extra: dict | None = None) -> dict:
    """A record row from a :class:`kbench_lib.judging.pipeline.Verdict` (or its dict); ``extra`` fills
    further columns of :data:`SCHEMA` (a sample's generation metadata), never the verdict's."""
    v = verdict if isinstance(verdict, dict) else verdict.to_dict()
    stats = v.get("runtime_stats") or {}
    row = {
        "run_id": run_id,
        "model": model,
        "strategy": strategy,
        "level": v.get("level"),
        "problem": v.get("problem"),
        "tags": list(tags),
        "sample": sample,
        "turn": turn,
        "backend": v.get("backend"),
        "precision": v.get("precision"),
        "device": v.get("device"),
        "device_name": v.get("device_name"),
        "small": v.get("small"),
        "compiled": v.get("compiled"),
        "correct": bool(v.get("correct")),
        "trusted": bool(v.get("correct")) and not v.get("flags"),
        "failure": v.get("failure"),
        "flags": list(v.get("flags") or []),
        "message": truncate(v.get("message")),
        "error": truncate(v.get("error")),
        "max_abs_err": v.get("max_abs_err"),
        "runtime_ms": v.get("runtime_ms"),
        "runtime_std_ms": stats.get("std_ms"),
        "runtime_p10_ms": stats.get("p10_ms"),
        "runtime_p90_ms": stats.get("p90_ms"),
        "n_trials": stats.get("n_trials"),
        "baseline_eager_ms": v.get("baseline_ms"),
        "baseline_compile_ms": v.get("baseline_compile_ms"),
        "speedup_eager": v.get("speedup"),
        "speedup_compile": v.get("speedup_compile"),
        "sol_ms": v.get("sol_ms"),
        "n_kernels": v.get("n_kernels"),
        "custom_kernel_share": v.get("custom_kernel_share"),
        "kernel_sha": v.get("kernel_sha"),
        "seeds_checked": v.get("seeds_checked"),
        "variants_checked": v.get("variants_checked"),
        "seed": v.get("seed"),
        "build_s": v.get("build_s"),
        "build_cached": v.get("build_cached"),
        "judge_s": v.get("judge_s"),
        "queue_s": v.get("queue_s"),
        "network_isolated": v.get("network_isolated"),
        **_environment_columns(v.get("env") or {}),
        "timestamp": _dt.datetime.now(_dt.timezone.utc),
        "judge_stages": sorted((v.get("stage_s") or {}).items()),
        "device_ms": stats.get("device_ms"),
        "baseline_eager_device_ms": (v.get("baseline_stats") or {}).get("device_ms"),
        "timing_remeasured": stats.get("remeasured"),
        "variants_declared": list(v.get("variants_declared") or []),
        "variants_derived": list(v.get("variants_derived") or []),
        **_profile_columns(v),
        "variant_speedups": _variant_column(v.get("variant_timings"), "speedup"),
        "variant_runtime_ms": _variant_column(v.get("variant_timings"), "runtime_ms"),
        "variant_baseline_ms": _variant_column(v.get("variant_timings"), "baseline_ms"),
        "protocol": v.get("protocol"),
        "cause": v.get("cause"),
        "configs": _configs_column(v.get("configs")),
        "host_probe_ms": stats.get("host_probe_ms"),
        "baseline_host_probe_ms": (v.get("baseline_stats") or {}).get("host_probe_ms"),
        "timing_host_drift": stats.get("host_drift"),
        "timing_host_moved": stats.get("host_moved"),
        "timing_host_retried": stats.get("host_retried"),
        "notes": [truncate(str(n), 1000) for n in (v.get("notes") or [])],
    }
    row.update({k: value for k, value in (extra or {}).items() if k in SCHEMA.names and k not in row})
    return row


class RecordWriter:
    """Appends rows to one run's part of the dataset; each append is durable on return."""

    def __init__(self, root: str | Path, run_id: str):
        self.root = Path(root)
        self.run_id = run_id
        self.dir = self.root / run_id / "records"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def append(self, rows: list[dict] | dict) -> Path:
        rows = [rows] if isinstance(rows, dict) else rows
        for r in rows:
            r.setdefault("run_id", self.run_id)
        table = pa.Table.from_pylist([{k: r.get(k) for k in SCHEMA.names} for r in rows], schema=SCHEMA)
        name = f"part-{time.time_ns()}-{os.getpid()}-{self.count:05d}.parquet"
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(table, tmp)
        final = self.dir / name
        os.replace(tmp, final)
        self.count += 1
        return final


def display_name(spec) -> str:
    """A model spec as figures and tables name it: a folder or corpus model by the name of the folder
    or file it was read from, not by its path (often a temporary folder a benchmark made)."""
    spec = str(spec)
    kind, sep, rest = spec.partition(":")
    if sep and kind in ("folder", "cuda-l1") and "/" in rest.rstrip("/"):
        return f"{kind}:{Path(rest.rstrip('/')).name}"
    return spec


def read_records(root: str | Path, run_id: str | None = None):
    """All records under ``root`` (or one run) as a pandas DataFrame, with the current schema."""
    root = Path(root)
    pattern = f"{run_id}/records/part-*.parquet" if run_id else "*/records/part-*.parquet"
    return read_record_files(root.glob(pattern))


def read_record_files(paths):
    """Record files (any parquet files with record columns, older schemas too) as one DataFrame
    with the current schema."""
    files = sorted(str(p) for p in paths)
    if not files:
        return SCHEMA.empty_table().to_pandas()
    return ds.dataset(files, schema=SCHEMA, format="parquet").to_table().to_pandas()


def save_records(df, path: str | Path) -> Path:
    """Write records (a DataFrame from ``read_records``, possibly filtered) to one parquet file with
    the records schema. ``DataFrame.to_parquet`` cannot: the map column ``judge_stages`` comes back
    from pyarrow as lists of pairs, which pandas' own conversion rejects."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = df.reindex(columns=SCHEMA.names)
    for name in set(SCHEMA.names) - set(df.columns):  # a column the rows lack is null, not NaN (which a list column rejects)
        frame[name] = [None] * len(frame)
    table = pa.Table.from_pandas(frame, schema=SCHEMA, preserve_index=False)
    pq.write_table(table, path)
    return path
