"""Timing fidelity: the judge's clocks against Nsight Compute's own counter, on single-kernel
workloads from ~3 us to ~20 ms of kernel time (fp32 elementwise ops and fp32 matmuls, TF32 off).

Per workload: the judge clock (``time_cuda`` run ``--repeats`` times: end-to-end and device-busy
medians, and their spread over the runs), the end-to-end clock once more without its head start
(the host's path to the first kernel included), CUDA-graph replay (the baselines' ``cudagraph``
mode under ``time_cuda``), and ncu's
``gpu__time_duration.sum`` (one child process of this script run under ncu for all workloads).
Writes one JSON line per workload to DIR/timing_fidelity.jsonl as it is known, and
DIR/timing_fidelity.md (table and the criteria). Run on the GPU machine:

    python3 benchmarks/timing_fidelity.py --out DIR [--only ew_4k mm_2048] [--no-ncu]

Child/parent protocol (``--child``, run under ncu): per workload the child builds its inputs,
warms up outside any range, then launches one marker kernel (``torch.cuda._sleep``, a kernel
named ``spin_kernel``) and ``--ncu-calls`` calls, each in its own ``kbench_fid`` NVTX push/pop
range with a synchronize inside; after each workload it prints ``KBENCH_FID {json}`` (name, calls
completed, error) to stderr. The parent splits ncu's kernel list at the markers, checks each
segment is a whole number of kernels per call, and sums each call's kernels.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import torch
from tqdm import tqdm

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kbench_lib.measure import ncu  # noqa: E402
from kbench_lib.measure.timing import time_cuda  # noqa: E402

RANGE = "kbench_fid"
MARKER = "spin_kernel"  # the kernel torch.cuda._sleep launches
CHILD_TAG = "KBENCH_FID "
N_SETS = 3
EW_SIZES = {"4k": 1 << 12, "16k": 1 << 14, "64k": 1 << 16, "256k": 1 << 18, "1m": 1 << 20, "4m": 1 << 22,
            "16m": 1 << 24, "64m": 1 << 26, "256m": 1 << 28}
MM_SIZES = (2048, 4096, 8192)


def _ew_setup(n: int):
    out = torch.empty(n, device="cuda")
    sets = [(torch.randn(n, device="cuda"), out) for _ in range(N_SETS + 1)]
    return sets[:N_SETS], sets[N_SETS:]


def _mm_setup(n: int):
    c = torch.empty(n, n, device="cuda")
    sets = [(torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda"), c) for _ in range(N_SETS + 1)]
    return sets[:N_SETS], sets[N_SETS:]


def _ew_call(x, out):
    return torch.mul(x, 1.0001, out=out)


def _mm_call(a, b, c):
    return torch.mm(a, b, out=c)


# name -> (kind, setup() -> (input_sets, warmup_sets), call)
WORKLOADS = {f"ew_{k}": ("elementwise", (lambda n=n: _ew_setup(n)), _ew_call) for k, n in EW_SIZES.items()}
WORKLOADS |= {f"mm_{n}": ("matmul", (lambda n=n: _mm_setup(n)), _mm_call) for n in MM_SIZES}


def _free() -> None:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------- child
def child(names: list[str], calls: int) -> None:
    """Runs under ncu: the marker and the profiled calls of every workload (module docstring)."""
    for name in names:
        _, setup, fn = WORKLOADS[name]
        done, marked, error = 0, False, None
        try:
            sets, warm = setup()
            for _ in range(3):
                fn(*warm[0])
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push(RANGE)
            torch.cuda._sleep(1000)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            marked = True
            for i in range(calls):
                torch.cuda.nvtx.range_push(RANGE)
                fn(*sets[i % len(sets)])
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
                done += 1
            del sets, warm
        except Exception as e:  # noqa: BLE001 - reported to the parent, which records it
            error = f"{type(e).__name__}: {e}"
        print(CHILD_TAG + json.dumps({"name": name, "calls": done, "marked": marked, "error": error}), file=sys.stderr, flush=True)
        _free()


# ---------------------------------------------------------------------------------------- ncu
def split_ncu(kernels: list[dict], order: list[dict]) -> dict[str, dict]:
    """Per workload of ``order`` (the child's lines): ncu_ms (median per call), kernels per call and
    kernel names, or ncu_error. Segments start at marker kernels (a workload whose set-up failed
    launched none). Without any marker, one kernel per call is assumed and the total checked."""
    marked = [o for o in order if o["marked"]]
    starts = [i for i, k in enumerate(kernels) if MARKER in k["kernel"]]
    if starts:
        if starts[0] != 0:
            raise ValueError(f"{starts[0]} kernels before the first marker: {kernels[0]['kernel'][:80]}")
        if len(starts) != len(marked):
            raise ValueError(f"{len(starts)} marker kernels in ncu output for {len(marked)} workloads")
        segments = [kernels[a + 1:b] for a, b in zip(starts, starts[1:] + [len(kernels)])]
    else:
        if len(kernels) != sum(o["calls"] for o in marked):
            raise ValueError(f"no marker kernels and {len(kernels)} kernels for {sum(o['calls'] for o in marked)} calls")
        segments, at = [], 0
        for o in marked:
            segments.append(kernels[at:at + o["calls"]])
            at += o["calls"]
    result = {o["name"]: {"ncu_error": o["error"] or "no marker"} for o in order}
    for o, seg in zip(marked, segments):
        r = result[o["name"]]
        try:
            if o["calls"] == 0 or len(seg) % o["calls"]:
                raise ValueError(f"{len(seg)} kernels for {o['calls']} calls (child error: {o['error']})")
            per_call = ncu.per_call_ns(seg, len(seg) // o["calls"])
            r.update(ncu_ms=statistics.median(per_call) / 1e6, ncu_calls=len(per_call),
                     ncu_kernels_per_call=len(seg) // o["calls"], ncu_kernels=sorted({k["kernel"] for k in seg}),
                     ncu_error=o["error"])
        except ValueError as e:
            r["ncu_error"] = str(e)
    return result


def run_ncu(names: list[str], args) -> tuple[dict[str, dict], str | None, str | None]:
    """(per-workload ncu results, error for all workloads, ncu version); never raises."""
    exe = None if args.no_ncu else ncu.available()
    if exe is None:
        return {}, "skipped (--no-ncu)" if args.no_ncu else "ncu not found", None
    try:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        version = None
    cmd = ncu.ncu_command([sys.executable, str(Path(__file__).resolve()), "--child", "--ncu-calls", str(args.ncu_calls),
                           "--only", *names], nvtx_range=RANGE, exe=exe)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.ncu_timeout)
    except subprocess.TimeoutExpired:
        return {}, f"ncu timed out after {args.ncu_timeout} s", version
    except OSError as e:
        return {}, f"ncu could not start: {e}", version
    (Path(args.out) / "ncu_output.txt").write_text(f"$ {' '.join(cmd)}\n--- rc {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}")
    order = [json.loads(line[len(CHILD_TAG):]) for line in (p.stderr + "\n" + p.stdout).splitlines() if line.startswith(CHILD_TAG)]
    rc_note = f"ncu exited {p.returncode}; " if p.returncode else ""
    try:
        try:
            kernels = ncu.parse_gpu_time_csv(p.stdout)
        except ValueError:
            kernels = ncu.parse_gpu_time_csv(p.stderr)
        return split_ncu(kernels, order), (rc_note or None), version
    except (ValueError, KeyError) as e:
        tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-6:])[-800:]
        return {}, f"{rc_note}{e}; output ended: {tail}", version


# ---------------------------------------------------------------------------------------- clocks
def graph_replay(fn, sets):
    """The call captured in CUDA graphs (one per input set), replayed: the baselines' cudagraph mode."""
    from kbench_lib.judging.baselines import _graphed

    class Call(torch.nn.Module):
        def forward(self, *inputs):
            return fn(*inputs)

    return _graphed(Call(), sets)


def _pct(clock: float | None, ref: float | None) -> float | None:
    return None if clock is None or not ref else (clock - ref) / ref * 100


def _spread(values: list) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return (max(values) - min(values)) / statistics.median(values) * 100


def measure(name: str, args) -> dict:
    kind, setup, fn = WORKLOADS[name]
    sets, warm = setup()
    runs = [time_cuda(fn, sets, budget_s=args.budget, warmup_sets=warm) for _ in range(args.repeats)]
    e2e = [t.median_ms for t in runs]
    dev = [getattr(t, "device_ms", None) for t in runs]
    row = {"e2e_ms": statistics.median(e2e), "device_ms": None if None in dev else statistics.median(dev),
           "e2e_medians_ms": e2e, "device_medians_ms": dev, "e2e_spread_pct": _spread(e2e), "device_spread_pct": _spread(dev),
           "remeasured": [getattr(t, "remeasured", 0) for t in runs], "n_trials": [t.n_trials for t in runs],
           "rse": [t.rse for t in runs], "head_start_us": runs[0].head_start_us}
    # the same clock without the head start: the host's path to the first kernel included
    row["e2e_idle_ms"] = time_cuda(fn, sets, budget_s=args.budget, warmup_sets=warm, head_start=False, device_clock=False).median_ms
    graphed = graph_replay(fn, sets)
    row["graph_ms"] = time_cuda(graphed, sets, budget_s=args.budget, device_clock=False).median_ms
    del sets, warm, graphed
    return row


# ---------------------------------------------------------------------------------------- report
def _size_ms(r: dict) -> float | None:
    return r.get("ncu_ms") or r.get("device_ms") or r.get("e2e_ms")


def criteria(rows: list[dict]) -> list[tuple[str, bool | None, str]]:
    """(criterion, held / not held / None when not judged, detail) for the Done-when criteria."""
    out = []
    checks = [  # label, value, kernel-size floor in ms and what measures it, |value| limit
        ("device-busy within 3% of ncu for every kernel >= 5 us", "device_vs_ncu_pct", 0.005, "ncu_ms", 3.0),
        ("end-to-end within 5% of ncu from 50 us", "e2e_vs_ncu_pct", 0.05, "ncu_ms", 5.0),
        ("spread of 10 end-to-end medians < 1% for every kernel >= 10 us", "e2e_spread_pct", 0.01, None, 1.0),
        ("spread of 10 device-busy medians < 1% for every kernel >= 10 us", "device_spread_pct", 0.01, None, 1.0)]
    for label, key, floor_ms, size_key, limit in checks:
        scope = [r for r in rows if ((r.get(size_key) if size_key else _size_ms(r)) or 0) >= floor_ms]
        if not scope or all(r.get(key) is None for r in scope):
            out.append((label, None, "no measurements in scope"))
            continue
        spread = key.endswith("spread_pct")
        bad = [f"{r['name']} " + ("n/a" if r.get(key) is None else f"{r[key]:{'' if spread else '+'}.2f}%") for r in scope
               if r.get(key) is None or abs(r[key]) > limit or (spread and r[key] >= limit)]
        out.append((label, not bad, f"{len(scope)} workloads in scope" + (f"; failing: {', '.join(bad)}" if bad else "")))
    return out


def render_markdown(rows: list[dict], meta: dict) -> str:
    def us(ms):
        return "-" if ms is None else f"{ms * 1e3:,.2f}"

    def with_pct(r, k):
        p = r.get(f"{k}_vs_ncu_pct")
        return us(r.get(f"{k}_ms")) + ("" if p is None else f" ({p:+.1f}%)")

    lines = ["# Timing fidelity: judge clocks vs Nsight Compute", "",
             " ".join(f"{k}: {v};" for k, v in meta.items() if v is not None), "",
             "| workload | ncu us | e2e us (Δ%) | device-busy us (Δ%) | graph replay us (Δ%) | e2e without head start us (Δ%) | spread of 10 medians e2e / device | re-measured runs |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rem = r.get("remeasured") or []
        lines.append(f"| {r['name']} | {us(r.get('ncu_ms'))} | {with_pct(r, 'e2e')} | {with_pct(r, 'device')} | {with_pct(r, 'graph')} | {with_pct(r, 'e2e_idle')} | "
                     f"{_fmt_pct(r.get('e2e_spread_pct'))} / {_fmt_pct(r.get('device_spread_pct'))} | "
                     f"{sum(rem)} (in {sum(1 for x in rem if x)}/{len(rem)} runs) |")
    notes = [f"- {r['name']}: {r['error']}" for r in rows if r.get("error")]
    notes += [f"- {r['name']} ncu: {r['ncu_error']}" for r in rows if r.get("ncu_error")]
    notes += [f"- {r['name']}: {r['ncu_kernels_per_call']} kernels per call" for r in rows if r.get("ncu_kernels_per_call", 1) != 1]
    lines += ["", "## Criteria", ""]
    lines += [f"- {label}: **{ {True: 'HELD', False: 'NOT HELD', None: 'NOT JUDGED'}[ok] }** ({detail})" for label, ok, detail in criteria(rows)]
    return "\n".join(lines + (["", "## Notes", "", *notes] if notes else [])) + "\n"


# ---------------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output folder (required unless --child)")
    ap.add_argument("--repeats", type=int, default=10, help="judge timing runs per workload")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per judge timing run")
    ap.add_argument("--ncu-calls", type=int, default=20, help="profiled calls per workload under ncu")
    ap.add_argument("--ncu-timeout", type=float, default=300, help="seconds for the whole ncu child run")
    ap.add_argument("--only", nargs="+", metavar="NAME", help=f"subset of: {' '.join(WORKLOADS)}")
    ap.add_argument("--child", action="store_true", help="internal: the process run under ncu")
    ap.add_argument("--no-ncu", action="store_true", help="skip the ncu run")
    args = ap.parse_args()
    names = args.only or list(WORKLOADS)
    if unknown := [n for n in names if n not in WORKLOADS]:
        ap.error(f"unknown workloads {unknown}; known: {list(WORKLOADS)}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    if args.child:
        return child(names, args.ncu_calls)
    if not args.out:
        ap.error("--out is required")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"ncu run over {len(names)} workloads ...", flush=True)
    ncu_rows, ncu_error, ncu_version = run_ncu(names, args)
    print(f"ncu: {ncu_error or 'ok'}", flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "ncu": ncu_version, "ncu_note": ncu_error,
            "repeats": args.repeats, "budget_s": args.budget, "ncu_calls": args.ncu_calls}
    rows = []
    for name in tqdm(names, desc="workloads", file=sys.stderr):
        row = {"name": name, "kind": WORKLOADS[name][0], **ncu_rows.get(name, {"ncu_error": ncu_error or "not in ncu output"}), "error": None}
        try:
            row |= measure(name, args)
        except Exception as e:  # noqa: BLE001 - every workload still gets its row
            row["error"] = f"{type(e).__name__}: {e}"
        _free()
        for k in ("e2e", "device", "graph", "e2e_idle"):
            row[f"{k}_vs_ncu_pct"] = _pct(row.get(f"{k}_ms"), row.get("ncu_ms"))
        row |= {"device": meta["device"], "torch": meta["torch"]}
        rows.append(row)
        with open(out / "timing_fidelity.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        (out / "timing_fidelity.md").write_text(render_markdown(rows, meta))
        tqdm.write(f"{name:9} ncu {_fmt(row.get('ncu_ms'))}  e2e {_fmt(row.get('e2e_ms'), row['e2e_vs_ncu_pct'])}  "
                   f"device {_fmt(row.get('device_ms'), row['device_vs_ncu_pct'])}  graph {_fmt(row.get('graph_ms'), row['graph_vs_ncu_pct'])}  "
                   f"spread {_fmt_pct(row.get('e2e_spread_pct'))} / {_fmt_pct(row.get('device_spread_pct'))}  {row['error'] or ''}", file=sys.stdout)
        sys.stdout.flush()
    print(render_markdown(rows, meta), flush=True)


def _fmt(ms: float | None, pct: float | None = None) -> str:
    return ("-" if ms is None else f"{ms * 1e3:.2f}us") + ("" if pct is None else f" ({pct:+.1f}%)")


def _fmt_pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}%"


if __name__ == "__main__":
    main()
