"""How many candidates the judge gets through per GPU-hour, on a fixed mixed batch, with every guard
on or off, on 1 or more GPUs. Not a test: run it on the GPU machine.

    python benchmarks/throughput.py --gpus 1 2 --guards on off --out-dir results/benchmarks
    python benchmarks/throughput.py --batch level3 --guards on --out-dir results/benchmarks

The batch (``batch()``): the hand-written reference solutions of level 1 and level 2, torch.compile
on those problems (``--compile`` only: a cold Inductor compile per candidate dominates otherwise),
the CPU and GPU adversarial suites' cheats and legitimate twins on their problems, and the bad
candidates of tests/fixtures (wrong, crashing, hanging, exiting, flooding) on the fixture problem.
Everything goes through ``runner.run_batch``, as ``kbench run`` does: one prepared reference per
problem, builds on the CPU cores while judging goes on, one judging thread per GPU.

``--batch level1|level2|level3`` judges the ``eager`` control instead (the problem's own Model as
the candidate, :func:`kbench_lib.generation.models.eager_model`) over every problem of that level: nothing to
build, so the judge's own cost per problem, stage by stage, and the bias of its clocks (the
control's speedup over eager should be 1.0: ``eager_speedup`` gives the median, the share within
0.95-1.05 and the problems outside it, with their flags and stage times).

Reported per (gpus, guards): candidates per hour, seconds per candidate (median, p90), seconds per
judge stage (median, p90, from the records' ``judge_stages``), the judge's peak host memory (RSS,
sampled) and /dev/shm peak, and whether anything was left in /dev/shm or /tmp afterwards. On one GPU,
the issue's host-memory target problem by problem (``memory_by_problem``: the judge's RSS over its
loaded runtime while each problem was prepared and judged, against that problem's input set). Written
to ``<out-dir>/<device-slug>/throughput-<date>.json`` as a list of objects.
"""
from __future__ import annotations

import argparse
import bisect
import datetime as dt
import faulthandler
import json
import logging
import math
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "adversarial"))

from kbench_lib.batch import runner  # noqa: E402
from kbench_lib.isolation import server_pool  # noqa: E402
from kbench_lib.core.candidates import load_candidate  # noqa: E402
from kbench_lib.core.cpu_sets import format_cpulist, gpu_cpu_sets  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions  # noqa: E402
from kbench_lib.generation.runs import select  # noqa: E402
from kbench_lib.measure.timing_summary import _host_bound  # noqa: E402
from kbench_lib.measure.host_speed import speed_ratio  # noqa: E402
from kbench_lib.judging import reference_store  # noqa: E402
from kbench_lib.batch.lane_host import lane_pids  # noqa: E402
from kbench_lib.generation.models import SOLUTIONS  # noqa: E402
from kbench_lib.suite.problems import discover, load_problem  # noqa: E402
from kbench_lib.core.provenance import device_name, device_slug, resolve_device  # noqa: E402
from kbench_lib.scoring.records import read_records, save_records  # noqa: E402

FIX = REPO / "tests" / "fixtures"
ADV = REPO / "tests" / "adversarial"


def _copy(src: Path, folder: Path, problem_stem: str, tag: str) -> None:
    """Lays a candidate out as folder:PATH expects: <folder>/<problem stem>__<tag>.py."""
    shutil.copy(src, folder / f"{problem_stem}__{tag}.py")


def batch(folder: Path, device: str, with_compile: bool, keep: list | None = None, backends: list | None = None) -> tuple[list, list]:
    """(problems, model specs): the candidates laid out under ``folder`` for the folder model.
    ``backends``: keep only candidates of these backends (and the problems left with one)."""
    import test_adversarial_cpu as cpu_suite

    problems = [p for p in discover(REPO / "problems") if p.level in ("level1", "level2")
                and (SOLUTIONS / p.level / f"{p.path.stem}.py").exists()]
    cand = folder / "cands"
    cand.mkdir(parents=True)
    for p in problems:
        _copy(SOLUTIONS / p.level / f"{p.path.stem}.py", cand, p.path.stem, "solution")
    suites = [("", cpu_suite.CHEATS, cpu_suite.LEGIT)]
    if device.startswith("cuda"):
        import test_adversarial_gpu as gpu_suite

        suites.append(("gpu", gpu_suite.CHEATS, gpu_suite.LEGIT))
    adv_problems = set()
    for sub, cheats, legit in suites:
        for c in cheats:
            _copy(ADV / "cheats" / sub / c.file, cand, c.problem, Path(c.file).stem)
            adv_problems.add(c.problem)
        for file, problem in legit:
            _copy(ADV / "legit" / sub / file, cand, problem, "legit_" + Path(file).stem)
            adv_problems.add(problem)
    fixture = "1_Scale_Add_ReLU"  # the adversarial suite's copy of the fixture problem (one stem, one problem)
    for f in sorted((FIX / "bad_candidates").glob("*.py")):
        if f.stem != "reads_secrets":
            _copy(f, cand, fixture, "bad_" + f.stem)
    adv_problems.add(fixture)
    problems += [load_problem(ADV / "problems" / f"{name}.py") for name in sorted(adv_problems)]
    if backends:
        for f in sorted(cand.glob("*.py")):
            if load_candidate(f).backend not in backends:
                f.unlink()
        stems = {f.stem.split("__")[0] for f in cand.glob("*.py")}
        problems = [p for p in problems if p.path.stem in stems]
    if keep:
        problems = [p for p in problems if any(k in p.key for k in keep)]
    models = [f"folder:{cand}"] + (["torch-compile"] if with_compile else [])
    return problems, models


class Peaks:
    """Samples this process's RSS and /dev/shm's use every 50 ms. Besides the whole RSS, its parts
    (``/proc/self/status``): anonymous memory (the judge's own: tensors, Python, libraries' heaps),
    file-backed pages (mapped libraries: CUDA's alone are gigabytes) and shared memory (the
    workers' result files in /dev/shm while the judge maps them), each with its own peak, and the
    RSS when sampling began: a judge's memory is what it adds to a process that has torch loaded."""

    PARTS = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "RssShmem": "shmem"}

    def __init__(self):
        self.shm = 0
        self.peak = dict.fromkeys(self.PARTS.values(), 0)
        self.start: int | None = None
        self.series: list[tuple[float, int, int]] = []  # (time.time(), RSS, anonymous RSS) per sample
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    @classmethod
    def now(cls) -> dict[str, int]:
        """The judge's RSS and its parts now, in bytes (``/proc/<pid>/status``): this process's, with
        those of its lane processes where a batch over several GPUs judges each in its own
        (:mod:`kbench_lib.batch.lane_process`)."""
        total = dict.fromkeys(cls.PARTS.values(), 0)
        for pid in ["self", *lane_pids()]:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for k, _, v in (line.partition(":") for line in f):
                        if k in cls.PARTS:
                            total[cls.PARTS[k]] += int(v.split()[0]) * 1024
            except OSError:  # a lane process that just ended
                continue
        return total

    def _run(self):
        while not self._stop.is_set():
            try:
                now = self.now()
                if self.start is None:
                    self.start = now.get("rss", 0)
                self.series.append((time.time(), now.get("rss", 0), now.get("anon", 0)))
                for k, v in now.items():
                    self.peak[k] = max(self.peak[k], v)
                st = os.statvfs("/dev/shm")
                self.shm = max(self.shm, (st.f_blocks - st.f_bfree) * st.f_frsize)
            except OSError:
                pass
            self._stop.wait(0.05)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()

    def report(self, shm_base: int) -> dict:
        """The peaks in MB: RSS and its parts, /dev/shm over ``shm_base``, RSS at the start."""
        return {"host_rss_peak_mb": round(self.peak["rss"] / 2**20, 1), "dev_shm_peak_mb": round(max(0, self.shm - shm_base) / 2**20, 1),
                "host_rss_start_mb": round((self.start or 0) / 2**20, 1),
                **{f"host_rss_{k}_peak_mb": round(v / 2**20, 1) for k, v in self.peak.items() if k != "rss"}}


def level_batch(level: str, keep: list | None = None) -> tuple[list, list]:
    """(problems, ["eager"]): every problem of ``problems/<level>`` (those whose key contains one of
    ``keep``), each judged with its own Model as the candidate."""
    return select(levels=[level], filters=keep), ["eager"]


EAGER_BAND = (0.95, 1.05)  # where the eager control's speedup should be


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def control_cause(r) -> str:
    """Why the eager control read outside :data:`EAGER_BAND` on one problem, from its record: the
    candidate and the baseline run the same operators, so a gap that the device-busy clocks do not
    show is host time (launches, Python, host syncs) in the end-to-end clock, which follows the
    host's speed at the moment each was timed."""
    run, base = _num(r.get("runtime_ms")), _num(r.get("baseline_eager_ms"))
    dev, base_dev = _num(r.get("device_ms")), _num(r.get("baseline_eager_device_ms"))
    if not (run and base and dev and base_dev):
        return "unexplained: no device-busy clock on one side"
    device_ratio = base_dev / dev
    if (_host_bound(run, dev) or _host_bound(base, base_dev)) and EAGER_BAND[0] <= device_ratio <= EAGER_BAND[1]:
        return (f"host-bound: the device was busy {dev:.3g} of {run:.3g} ms (candidate) and {base_dev:.3g} of {base:.3g} ms "
                f"(baseline); the device-busy clocks agree ({device_ratio:.3f}x): host time differed between the two timings"
                f"{_host_speeds(r)}")
    if not EAGER_BAND[0] <= device_ratio <= EAGER_BAND[1]:
        return f"device time differs: {base_dev:.3g} ms against {dev:.3g} ms of device-busy time ({device_ratio:.3f}x)"
    return f"unexplained: device-bound ({dev:.3g} of {run:.3g} ms busy) and the device-busy clocks agree ({device_ratio:.3f}x)"


def host_speed_agrees(r) -> bool | None:
    """Whether the host-speed probes (:mod:`kbench_lib.measure.host_speed`) explain the control's
    gap on one problem: the host ran more than :data:`EAGER_BAND` apart between the two timings,
    in the direction of the gap (a slower host while the baseline was timed, a speedup above 1).
    None without both probes or inside the band."""
    ratio = speed_ratio(_num(r.get("host_probe_ms")), _num(r.get("baseline_host_probe_ms")))
    sp = _num(r.get("speedup_eager"))
    if ratio is None or sp is None or EAGER_BAND[0] <= sp <= EAGER_BAND[1]:
        return None
    return (ratio > EAGER_BAND[1] and sp > 1) or (ratio < EAGER_BAND[0] and sp < 1)


def _host_speeds(r) -> str:
    c, b = _num(r.get("host_probe_ms")), _num(r.get("baseline_host_probe_ms"))
    if not (c and b):
        return ""
    return (f"; the host-speed probe took {c:.3g} ms while the candidate was timed and {b:.3g} ms while the baseline was "
            f"({b / c:.3g}x){'' if host_speed_agrees(r) else ', which does not explain the gap'}")


def eager_speedups(df) -> dict | None:
    """The eager control's speedups over eager (the judge's clock bias): median, share within
    :data:`EAGER_BAND`, and every problem outside it with its flags and failure."""
    d = df[(df["model"] == "eager") & df["speedup_eager"].notna()] if len(df) and "model" in df else df.iloc[0:0]
    if not len(d):
        return None
    sp = d["speedup_eager"].astype(float)
    inside = sp.between(*EAGER_BAND)
    outside = [{"problem": r["problem"], "speedup": round(float(r["speedup_eager"]), 4), "runtime_ms": r["runtime_ms"],
                "baseline_eager_ms": r["baseline_eager_ms"], "device_ms": _num(r.get("device_ms")),
                "baseline_eager_device_ms": _num(r.get("baseline_eager_device_ms")), "cause": control_cause(r),
                "failure": r["failure"] if isinstance(r["failure"], str) else None, "flags": list(r["flags"] if r["flags"] is not None else [])}
               for _, r in d[~inside].iterrows()]
    dev = [_num(r.get("baseline_eager_device_ms")) / _num(r.get("device_ms")) for _, r in d.iterrows()
           if _num(r.get("device_ms")) and _num(r.get("baseline_eager_device_ms"))]
    dev_inside = [EAGER_BAND[0] <= x <= EAGER_BAND[1] for x in dev]
    agrees = [host_speed_agrees(r) for _, r in d[~inside].iterrows()]
    return {"timed": int(len(d)), "median": round(float(sp.median()), 4), "p10": round(float(sp.quantile(0.1)), 4),
            "p90": round(float(sp.quantile(0.9)), 4), "share_within_band": round(float(inside.mean()), 4),
            "band": list(EAGER_BAND), "outside": outside,
            # outside the band with both host-speed probes: how many the probes explain (host_speed_agrees)
            "host_speed": {"probed": sum(a is not None for a in agrees), "explained": sum(a is True for a in agrees)},
            # the same control read on the device-busy clock (kernel time, no host time in it)
            "device_clock": {"timed": len(dev), "median": round(statistics.median(dev), 4) if dev else None,
                             "share_within_band": round(sum(dev_inside) / len(dev), 4) if dev else None},
            "not_timed": [{"problem": r["problem"], "failure": r["failure"], "message": str(r["message"] or "")[:300]}
                          for _, r in df[(df["model"] == "eager") & df["speedup_eager"].isna()].iterrows()]}


def _load_runtime(device: str) -> None:
    """What a judge process loads before its first verdict, whatever it judges: the CUDA context,
    cuBLAS and a profiler session. The RSS after it is the floor the judge's own data adds to."""
    import torch

    if device.startswith("cuda"):
        x = torch.randn(256, 256, device=device)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]):
            float((x @ x).sum())


def _input_sets(problems, device: str) -> dict[str, float]:
    """MB of each problem's input set as the judge draws it on ``device`` (full size on a GPU, SMALL
    on the CPU), sized on the meta device; a problem that cannot be sized there is left out."""
    from kbench_lib.suite.roofline import input_set_bytes

    sizes = {}
    for p in problems:
        try:
            sizes[p.key] = input_set_bytes(p, None if device.startswith("cuda") else dict(p.small)) / 2**20
        except Exception:  # noqa: BLE001 - data-dependent shapes and the like
            continue
    return sizes


def memory_by_problem(series: list[tuple[float, int, int]], ends: list[tuple[float, str]], floor: dict[str, int],
                      input_mb: dict[str, float]) -> dict[str, dict]:
    """The issue's host-memory target problem by problem, for a pass on one GPU (one candidate at a
    time): each RSS sample (``series``: wall time, RSS, anonymous RSS, bytes) belongs to the
    candidate whose verdict was recorded next (``ends``: wall time, problem key), which covers
    preparing its problem's reference and judging it. Per problem: the peaks over ``floor`` (RSS and
    anonymous RSS of the judge with its runtime loaded, bytes) in MB, its input set in MB, and their
    ratio (the target: under 2). Samples after the last verdict are left out."""
    ends = sorted(ends)
    times = [t for t, _ in ends]
    peaks: dict[str, list[int]] = {}
    for t, rss, anon in series:
        i = bisect.bisect_left(times, t)
        if i == len(ends):
            continue
        peak = peaks.setdefault(ends[i][1], [0, 0])
        peak[0], peak[1] = max(peak[0], rss - floor.get("rss", 0)), max(peak[1], anon - floor.get("anon", 0))
    out = {}
    for key, (rss, anon) in sorted(peaks.items()):
        size = input_mb.get(key)
        out[key] = {"rss_over_floor_peak_mb": round(max(0, rss) / 2**20, 1), "anon_over_floor_peak_mb": round(max(0, anon) / 2**20, 1),
                    "input_set_mb": None if size is None else round(size, 3),
                    "ratio": round(max(0, rss) / 2**20 / size, 3) if size else None}
    return out


class Timeline(logging.Handler):
    """Collects a batch's timeline (``kbench.timeline`` at DEBUG: references prepared and measured
    ahead, each lane's server seen ready, each judgement begun), its times in seconds after
    ``started_wall``."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.started_wall = time.time()
        self.events: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append({"t": round(record.created - self.started_wall, 3), "event": getattr(record, "event", None),
                            "device": getattr(record, "device", None), "key": getattr(record, "key", None),
                            "seconds": getattr(record, "seconds", None), "parts": getattr(record, "parts", None)})

    def __enter__(self):
        log = logging.getLogger("kbench.timeline")
        log.setLevel(logging.DEBUG)
        log.addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("kbench.timeline").removeHandler(self)


def servers_seen(events: list[dict]) -> dict[str, float]:
    """{device: seconds after the pass began at which its lane first saw its fork server ready}."""
    seen: dict[str, float] = {}
    for e in events:
        if e["event"] == "server_seen" and e["device"] not in seen:
            seen[e["device"]] = e["t"]
    return seen


REFERENCE_STAGES = ("baseline", "reference_profile", "variant_baseline")  # a verdict's stages that measure (or read) the reference


def reference_side(events: list[dict], df) -> dict:
    """The seconds each problem's reference side took in a pass: its preparation and the judge's
    measurements made ahead (the timeline's ``prepared`` and ``measured``), plus those made inside
    its verdicts (:data:`REFERENCE_STAGES` of the records' ``judge_stages``; a stored measurement
    counts its read). The issue's target for a second batch: 1 s or less per problem. Median, p90
    and max over the problems, and every problem over 1 s with its parts."""
    parts: dict[str, dict[str, float]] = {}
    for e in events:
        if e.get("event") in ("prepared", "measured") and e.get("key") and isinstance(e.get("seconds"), (int, float)):
            d = parts.setdefault(e["key"], {})
            d[e["event"]] = d.get(e["event"], 0.0) + e["seconds"]
    if len(df) and "judge_stages" in df:
        for _, r in df.iterrows():
            stages = dict(r["judge_stages"]) if r["judge_stages"] is not None else {}
            d = parts.setdefault(r["problem"], {})
            for name in REFERENCE_STAGES:
                if name in stages:
                    d["verdicts"] = d.get("verdicts", 0.0) + float(stages[name])
    totals = {k: sum(v.values()) for k, v in parts.items()}
    if not totals:
        return {"problems": 0}
    values = sorted(totals.values())
    return {"problems": len(values), "median_s": round(statistics.median(values), 3), "p90_s": round(_q(values, 0.9), 3),
            "max_s": round(values[-1], 3),
            "over_1s": {k: {"s": round(t, 3), **{p: round(x, 3) for p, x in parts[k].items()}}
                        for k, t in sorted(totals.items(), key=lambda kv: -kv[1]) if t > 1.0}}


def per_device(df, started_wall: float) -> dict[str, dict]:
    """{device: its verdicts, and the seconds after the pass began (``started_wall``, a time.time())
    at which its first judgement began, and its first and last verdicts were recorded}: how long
    each GPU took to start judging, and to end."""
    out = {}
    if not len(df):
        return out
    for dev, g in df.groupby("device"):
        ts = sorted(t.timestamp() for t in g["timestamp"])
        began = min(t.timestamp() - (s or 0.0) for t, s in zip(g["timestamp"], g["judge_s"]))
        out[str(dev)] = {"candidates": int(len(g)), "first_judgement_began_s": round(began - started_wall, 2),
                         "first_verdict_s": round(ts[0] - started_wall, 2), "last_verdict_s": round(ts[-1] - started_wall, 2)}
    return out


def _memory_worst(by_problem: dict[str, dict]) -> dict | None:
    """The problem with the highest RSS-over-floor to input-set ratio (among those with a size)."""
    rated = [(v["ratio"], k) for k, v in by_problem.items() if v["ratio"] is not None]
    if not rated:
        return None
    ratio, key = max(rated)
    return {"problem": key, "ratio": ratio, "under_2x_everywhere": all(r < 2 for r, _ in rated)}


def _leftovers() -> list[str]:
    found = []
    for parent in ("/dev/shm", tempfile.gettempdir()):
        try:
            found += [os.path.join(parent, n) for n in os.listdir(parent) if n.startswith("kbench-")]
        except OSError:
            pass
    return found


def _q(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


class Cut(KeyboardInterrupt):
    """The pass was stopped from outside (SIGTERM: a step's ``timeout``) before its batch ended; a
    KeyboardInterrupt, so the batch stops as it does for Ctrl-C (its judging threads take no more)."""


_TERM = {"judging": False, "stopped": False}  # a pass's batch is running; SIGTERM came


def _on_term(signum, frame):
    """SIGTERM: stop the batch in hand (its pass reports what it finished) and run no other pass.
    Outside a batch (summing up, writing), the pass in hand ends first."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # `timeout` signals the command and its process group: once is enough
    _TERM["stopped"] = True
    if _TERM["judging"]:
        raise Cut()


def measure(problems, models, gpus: int, guards: bool, device: str, args, root: Path, overlap: bool = False,
            idle_s: float = JudgeOptions.idle_timeout_s) -> dict:
    """One measured pass. Stopped by SIGTERM (``timeout`` ending a step), it still reports the
    candidates whose verdicts were written by then, over the time they took, marked ``partial``
    (the batch's order is fixed, so a partial pass is its first problems only)."""
    opts = JudgeOptions(device=device, guards=guards, timing_budget_s=args.timing_budget, run_timeout_s=args.run_timeout,
                        reference_store=False if args.reference_store == "off" else None,
                        idle_timeout_s=idle_s, build_timeout_s=args.build_timeout)
    run_id = f"tp-{gpus}-{guards}-{overlap}-{idle_s:g}"
    before = set(_leftovers())
    _load_runtime(device)
    if args.servers == "ready":  # as a later batch on a still warm machine finds them (or a notebook that started them ahead)
        runner.start_servers(runner.batch_devices(opts, gpus))
    floors = Peaks.now()
    floor = floors.get("rss", 0)
    started, started_wall = time.monotonic(), time.time()
    partial = False
    with Peaks() as peaks, Timeline() as timeline:
        timeline.started_wall = started_wall
        shm_base = peaks.shm
        try:
            _TERM["judging"] = True
            for m in models:
                runner.run_batch(problems, m, run_id=run_id, runs_root=root, opts=opts, progress=not args.quiet,
                                 prebuild_jobs=args.build_jobs, gpus=gpus, overlap=overlap)
        except Cut:  # Ctrl-C (a plain KeyboardInterrupt) still ends the run
            partial = True
        finally:
            _TERM["judging"] = False
    wall = time.monotonic() - started
    df = read_records(root, run_id)
    input_mb = _input_sets(problems, device)
    by_problem = {}
    if gpus == 1 and len(df):  # one candidate at a time: each RSS sample has one problem
        ends = [(ts.timestamp(), key) for ts, key in zip(df["timestamp"], df["problem"])]
        by_problem = memory_by_problem(peaks.series, ends, floors, input_mb)
    if args.records_dir:  # the verdicts behind the figures, for reading what failed and why
        save_records(df, Path(args.records_dir) / (f"throughput-records-{gpus}gpu-guards_{'on' if guards else 'off'}-"
                                                   f"overlap_{'on' if overlap else 'off'}-idle_{idle_s:g}.parquet"))
    return {"device_name": device_name(device), "gpus": gpus, "guards": guards, "overlap": overlap, "partial": partial,
            "servers": args.servers,
            **summary(df, wall, gpus), **peaks.report(shm_base),
            # the host-memory target: what the judge adds over a process with its runtime
            # loaded, against the largest input set of the batch (the target: under 2x)
            "host_rss_floor_mb": round(floor / 2**20, 1), "host_rss_over_floor_peak_mb": round(max(0, peaks.peak["rss"] - floor) / 2**20, 1),
            "largest_input_set_mb": round(max(input_mb.values()), 3) if input_mb else None,
            # per problem on one GPU: the peak over the floor while it was judged, against its own input set
            "host_memory_by_problem": by_problem, "host_memory_worst": _memory_worst(by_problem),
            # where each GPU's time went: its first verdict after the pass began (its start), its last
            "per_device": per_device(df, started_wall),
            # when each fork server could fork its first worker, seconds after the pass began (before: started ahead)
            "servers_ready_s": sorted(round(s.ready_wall - started_wall, 2) for s in server_pool.started_servers()),
            # when each lane first saw its server ready (lane processes' servers are not this process's)
            "servers_seen_s": servers_seen(timeline.events),
            # each GPU judged by a process of its own (kbench_lib.batch.lane_process): the RSS figures sum them
            "lane_processes": runner.lane_processes_by_default(runner.batch_devices(opts, gpus)),
            # the batch's timeline: references prepared (and how long each took), servers seen ready, judgements begun
            "timeline": timeline.events,
            # seconds per problem on the reference side (prepared, measured ahead, measured in its verdicts)
            "reference_side": reference_side(timeline.events, df),
            "left_behind": [] if partial else sorted(set(_leftovers()) - before),
            # each GPU's workers' cores, where a batch over several GPUs gives them cores of their own
            "cpu_sets": {d: format_cpulist(c) for d, c in gpu_cpu_sets(runner.batch_devices(opts, gpus)).items()},
            "timing_budget_s": args.timing_budget, "run_timeout_s": args.run_timeout, "idle_timeout_s": idle_s,
            "build_timeout_s": args.build_timeout, "build_jobs": args.build_jobs, "reference_store": args.reference_store,
            "date": dt.date.today().isoformat()}


def summary(df, wall: float, gpus: int) -> dict:
    """A pass's figures from its records: counts, rates, seconds per candidate and per judge stage
    (median and p90), outcomes."""
    n = len(df)
    per = [float(x) for x in df["judge_s"].dropna()]
    stages: dict[str, list[float]] = {}
    for st in df["judge_stages"]:
        for k, val in (st or []):
            stages.setdefault(k, []).append(val)
    return {
        "candidates": n, "wall_s": round(wall, 1), "wall_s_per_candidate": round(wall / max(1, n), 3),
        "candidates_per_hour": round(n / wall * 3600, 1) if wall > 0 else 0.0,
        "candidates_per_gpu_hour": round(n / wall * 3600 / gpus, 1) if wall > 0 else 0.0,
        "median_s_per_candidate": _q(per, 0.5), "p90_s_per_candidate": _q(per, 0.9), "max_s_per_candidate": max(per) if per else None,
        "slowest": [{"problem": r["problem"], "judge_s": round(float(r["judge_s"]), 2)}
                    for _, r in df.dropna(subset=["judge_s"]).nlargest(5, "judge_s").iterrows()],
        "stages_s": {k: {"median": _q(v, 0.5), "p90": _q(v, 0.9)} for k, v in sorted(stages.items())},
        "outcomes": df["failure"].fillna("none").value_counts().to_dict(),
        # what the batch is made of: on a GPU, the CPU suite's C++ kernels crash at their first call
        # (they read the GPU tensors' pointers on the host), quickly; a reader weighs the rate by this
        "by_backend": {b: {"candidates": int(len(g)), "judge_s": round(float(g["judge_s"].fillna(0).sum()), 1),
                           "failures": g["failure"].fillna("none").value_counts().to_dict()}
                       for b, g in df.groupby("backend")},
        "correct_unflagged": int((df["correct"] & df["flags"].map(len).eq(0)).sum()),
        "eager_speedup": eager_speedups(df),
        "timed_runs": timed_runs(df),
    }


def timed_runs(df) -> dict:
    """How the candidates' timed runs went: measured again for drift (``timing_remeasured``), kept
    though they drifted, because the host's speed drifted with them (``timing_host_drift``), and run
    on another CPU, one at the host's full speed (``timing_host_moved``), and run again there, the
    host having slowed during the first run (``timing_host_retried``)."""
    def count(col: str, test) -> int:
        return int(df[col].map(lambda x: _num(x) is not None and test(_num(x))).sum()) if col in df else 0

    return {"remeasured": count("timing_remeasured", lambda x: x > 0),
            "host_drift_kept": count("timing_host_drift", lambda x: x > 0),
            "moved_to_a_fast_cpu": count("timing_host_moved", lambda x: x > 0),
            "run_again_at_full_speed": count("timing_host_retried", lambda x: x > 0)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto")
    ap.add_argument("--gpus", nargs="+", type=int, default=[1])
    ap.add_argument("--guards", nargs="+", choices=["on", "off"], default=["on", "off"])
    ap.add_argument("--overlap", nargs="+", choices=["on", "off"], default=["off"],
                    help="each GPU's next candidate starts beside the judge's checks of the previous one (run_batch(overlap=))")
    ap.add_argument("--git-sha", default=os.environ.get("KBENCH_GIT_SHA"), help="the commit measured (a tree copy may answer git wrongly)")
    ap.add_argument("--batch", choices=["mixed", "level1", "level2", "level3"], default="mixed",
                    help="mixed: the fixed mixed batch; levelN: the eager control over every problem of that level")
    ap.add_argument("--compile", action="store_true", help="add torch.compile of every problem to the batch")
    ap.add_argument("--defaults", action="store_true",
                    help="the judge's default options (timing budget, run, idle and build limits), as a user of kbench run gets "
                         "them; the row says options: defaults (else options: benchmark)")
    ap.add_argument("--timing-budget", type=float, default=1.0)
    ap.add_argument("--run-timeout", type=float, default=30.0, help="run and build limit per candidate (the hanging ones run into it)")
    ap.add_argument("--idle-timeout", nargs="+", type=float, default=[JudgeOptions.idle_timeout_s],
                    help="a pass for each: end a candidate idle (no CPU time) this long (the sleeping hang ends there; "
                         "0: off, as before 2026-11-27)")
    ap.add_argument("--build-jobs", type=int, default=8)
    ap.add_argument("--build-timeout", type=float, default=300.0,
                    help="build limit per candidate (a cold CUDA build takes 45-90 s; the run limit would fail it as a compile_error)")
    ap.add_argument("--out-dir", default=str(REPO / "results" / "benchmarks"))
    ap.add_argument("--backends", nargs="*", default=None, help="keep only candidates of these backends (triton torch: no CUDA builds)")
    ap.add_argument("--filter", nargs="*", default=None, help="keep problems whose key contains any of these (a smaller batch)")
    ap.add_argument("--records-dir", default=None, help="also save each pass's records here as one parquet file")
    ap.add_argument("--warm", choices=["judge", "build", "none"], default=None,
                    help="before the measured passes: judge every candidate once untimed, only build them, or nothing "
                         "(a build cache warm from an earlier call on the same machine); default judge for the mixed "
                         "batch, none for a level's eager control (nothing to build)")
    ap.add_argument("--warm-only", action="store_true", help="stop after the warm step (the next call measures)")
    ap.add_argument("--servers", choices=["cold", "ready"], default="cold",
                    help="cold: each pass's judging threads start their fork servers (8-12 s, a fresh process's first batch); "
                         "ready: started before the pass's clock, as a later batch of the same process finds them")
    ap.add_argument("--reference-store", choices=["keep", "fresh", "off"], default="keep",
                    help="the judge's reference store (docs/JUDGING.md): keep (the default store: what a later batch of a user finds), "
                         "fresh (an empty one for this run: every baseline and profile measured here), off (never read or written)")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    if a.defaults:
        a.timing_budget, a.run_timeout = JudgeOptions.timing_budget_s, JudgeOptions.run_timeout_s
        a.build_timeout, a.idle_timeout = JudgeOptions.build_timeout_s, [JudgeOptions.idle_timeout_s]
    faulthandler.enable(all_threads=True)  # a crash of the judge's process shows every thread's stack (one pass died so, 2026-11-27)
    device = resolve_device(a.device)
    work = Path(tempfile.mkdtemp(prefix="throughput-"))
    if a.reference_store == "fresh":  # an empty store for this run: its first pass measures every baseline and profile (lane processes inherit it)
        os.environ[reference_store.ENV_DIR] = str(work / "reference-store")
    if a.batch == "mixed":
        problems, models = batch(work, device, a.compile, a.filter, a.backends)
    else:
        problems, models = level_batch(a.batch, a.filter)
    a.warm = a.warm or ("judge" if a.batch == "mixed" else "none")
    print(f"batch {a.batch}: {len(problems)} problems, models {', '.join(models)}", flush=True)
    # builds happen once, before any measured pass: the target is a warm candidate (warm build cache)
    warm_opts = JudgeOptions(device=device, timing=False, run_timeout_s=a.run_timeout, build_timeout_s=a.build_timeout)
    t0 = time.monotonic()
    if a.warm == "judge":  # every candidate judged once without timing (Triton's caches warm too)
        runner.run_batch(problems, models[0], run_id="warm-builds", runs_root=work / "warm", opts=warm_opts,
                         progress=not a.quiet, prebuild_jobs=a.build_jobs, gpus=max(a.gpus))
    elif a.warm == "build":  # the compiled candidates built, nothing judged
        stems = {p.path.stem for p in problems}  # the kept problems' candidates only (--filter)
        cands = [load_candidate(f) for f in sorted((work / "cands").glob("*.py")) if f.stem.split("__")[0] in stems]
        print(f"warm builds: {len(runner.prebuild(cands, device, warm_opts, a.build_jobs, progress=not a.quiet))} built", flush=True)
    if a.warm != "none":
        print(f"warm step ({a.warm}): {time.monotonic() - t0:.1f} s", flush=True)
    if a.warm_only:
        return
    out = []
    dest = Path(a.out_dir) / device_slug(device)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"throughput-{dt.date.today().isoformat()}.json"
    old = json.loads(path.read_text()) if path.exists() else []
    signal.signal(signal.SIGTERM, _on_term)  # a step's timeout: the pass in hand reports what it finished
    passes = [(gpus, g, ov, idle) for gpus in a.gpus for g in a.guards for ov in a.overlap for idle in a.idle_timeout]
    for gpus, g, ov, idle in passes:
        r = measure(problems, models, gpus, g == "on", device, a, work / "runs", ov == "on", idle)
        r["git_sha"] = a.git_sha
        r["batch"] = a.batch
        r["options"] = "defaults" if a.defaults else "benchmark"
        out.append(r)
        print(json.dumps(r), flush=True)
        path.write_text(json.dumps(old + out, indent=1))  # after each pass: a call cut short keeps what it measured
        if _TERM["stopped"]:
            print(f"stopped: {len(passes) - len(out)} pass(es) not run", flush=True)
            break
    print(f"{'gpus':>4} {'guards':>6} {'overlap':>7} {'idle s':>6} {'cands':>5} {'wall s':>7} {'cand/h':>8} {'cand/GPU-h':>10} {'median s':>8} {'p90 s':>6} {'RSS MB':>7} {'shm MB':>6}")
    for r in out:
        print(f"{r['gpus']:>4} {str(r['guards']):>6} {str(r['overlap']):>7} {r['idle_timeout_s']:>6g} {r['candidates']:>5} {r['wall_s']:>7} {r['candidates_per_hour']:>8} "
              f"{r['candidates_per_gpu_hour']:>10} {r['median_s_per_candidate'] or 0:>8.2f} {r['p90_s_per_candidate'] or 0:>6.2f} "
              f"{r['host_rss_peak_mb']:>7} {r['dev_shm_peak_mb']:>6}{'  partial' if r['partial'] else ''}")
    print("written:", path)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
