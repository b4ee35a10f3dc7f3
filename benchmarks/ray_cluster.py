"""The same batch on one GPU and on a two-node Ray cluster, then with the second node killed
mid-batch. Not a test: run it on a machine with two GPUs.

    python benchmarks/ray_cluster.py --out-dir $OUT                     # every pass, in one call
    python benchmarks/ray_cluster.py --out-dir $OUT --passes ray fault --work /tmp/raybench    # or in parts: the
    python benchmarks/ray_cluster.py --out-dir $OUT --passes local local2 --work /tmp/raybench # records stay in --work
    python benchmarks/ray_cluster.py --device cpu --filter 1_Scale --min-candidates 6     # a smoke test without a GPU

Two Ray nodes on one host stand in for two machines: a head started with ``ray start --head``
seeing only GPU 0 (``CUDA_VISIBLE_DEVICES=0``) and a second ``ray start --address=...`` seeing
only GPU 1, each its own raylet with its own processes, both started here (``--block``, each in
its own session) and ended here. The batch is benchmarks/throughput.py's (level-1 and level-2
reference solutions, the adversarial suites, the bad fixtures), its solutions laid out again as
further samples until it has ``--min-candidates``; builds are warmed once first (one build cache,
shared by both nodes of this host).

Every pass's judging starts cold: ``local`` and ``local2`` each run in a fresh process (their rows'
``fresh_process``), as a Ray pass's judging actors are new processes.

Passes: ``local`` (runner.run_batch on one GPU, the baseline), ``local2`` (runner.run_batch on both
GPUs, no Ray: ``kbench run --gpus 2``), ``ray`` (both nodes, one judging actor each), ``fault`` (both nodes; the second node's processes are killed once ``--kill-at`` of
the batch is recorded). Reported per pass: candidates, wall, candidates per hour and per GPU-hour;
for ``fault`` also when the loss was noticed (kill -> judge_died), when the first job it was
running was recorded elsewhere, how many jobs went back in line, and whether every sample was
recorded exactly once (``records_lost``: samples of the batch with no record; ``records_duplicated``:
records beyond one a sample). Verdicts (correct, failure) are compared with the local pass by sample
key, also when that pass ran in an earlier call with the same ``--work``. Each pass's row is
appended to ``<out-dir>/<device-slug>/ray_cluster-<date>.json`` as soon as it ends.

``--device cpu`` runs the same passes on the CPU (nodes without GPUs, CPU judges, SMALL sizes):
a check of the benchmark itself, not a measurement.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import throughput  # noqa: E402
from kbench_lib.batch import runner  # noqa: E402
from kbench_lib.judging.pipeline import JudgeOptions  # noqa: E402
from kbench_lib.core.provenance import device_name, device_slug  # noqa: E402
from kbench_lib.suite.problems import load_problem  # noqa: E402
from kbench_lib.scoring.records import read_records  # noqa: E402


def laid_out(work: Path, min_candidates: int, keep, device: str) -> tuple[list, str]:
    """(problems, folder model) of throughput.py's batch, solutions repeated until it is large enough."""
    problems, models = throughput.batch(work, device, False, keep)
    folder = Path(models[0].split(":", 1)[1])
    solutions = sorted(folder.glob("*__solution.py"))
    n, copy = len(list(folder.glob("*.py"))), 0
    while n < min_candidates and solutions:
        copy += 1
        for f in solutions:
            shutil.copy(f, f.with_name(f.name.replace("__solution.py", f"__solution_copy{copy}.py")))
            n += 1
    return problems, models[0]


def judged_batch(batch_file: Path, model: str, run_id: str, runs_root: Path, opts: JudgeOptions, build_jobs: int, gpus) -> float:
    """Seconds :func:`runner.run_batch` takes over the laid-out batch (``batch_file``), from its call
    to its return: the judging lanes' start (fork servers, CUDA contexts, first references) included."""
    problems = [load_problem(Path(p)) for p in json.loads(Path(batch_file).read_text())[0]]
    t0 = time.time()
    runner.run_batch(problems, model, run_id=run_id, runs_root=runs_root, opts=opts, progress=False, prebuild_jobs=build_jobs, gpus=gpus)
    return time.time() - t0


def in_fresh_process(fn, *args):
    """``fn(*args)`` in a new interpreter (spawned, not a daemon: its batch starts processes of its
    own), its value returned. A pass judged in this process after another would find that one's
    fork servers and CUDA context warm, where a Ray pass's judges start cold; each pass here starts
    its judging cold, as a ``kbench run`` does."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_send_result, args=(there, fn, args))
    proc.start()
    there.close()
    try:
        ok, value = here.recv()
    except EOFError:
        ok, value = False, "its process ended without a result"
    proc.join()
    if not ok and proc.exitcode:
        value = f"{value} (exit status {proc.exitcode})"
    if not ok:
        raise RuntimeError(f"{fn.__name__} in a fresh process failed: {value}")
    return value


def _send_result(conn, fn, args) -> None:
    import traceback

    try:
        conn.send((True, fn(*args)))
    except BaseException:  # noqa: BLE001 - the parent raises it
        conn.send((False, traceback.format_exc()[-3000:]))


def ray_command() -> list[str]:
    """The ``ray`` command of this interpreter: its script beside the interpreter, else the module
    (Ray installed with ``pip --target`` on a PYTHONPATH has no script)."""
    script = Path(sys.executable).with_name("ray")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


class Node:
    """One ``ray start --block`` process in its own session, seeing one GPU (none: ``gpu`` None)."""

    def __init__(self, args: list[str], gpu: str | None, log: Path):
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu if gpu is not None else ""}
        self.log = open(log, "w")
        self.proc = subprocess.Popen([*ray_command(), "start", "--block", f"--num-gpus={1 if gpu is not None else 0}",
                                      "--disable-usage-stats", *args], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL to every process of the node's session (raylet, its workers, the judging actor)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()


def wait_for(ray, nodes: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(1 for n in ray.nodes() if n.get("Alive")) >= nodes:
            return
        time.sleep(0.5)
    raise RuntimeError(f"the cluster did not reach {nodes} nodes in {timeout:g} s")


def start_cluster(work: Path, cpus: int, gpus: bool):
    port = 6389
    head = Node(["--head", f"--port={port}", f"--num-cpus={cpus}", "--include-dashboard=false"], "0" if gpus else None,
                work / "head.log")
    address = f"127.0.0.1:{port}"
    second = Node([f"--address={address}", f"--num-cpus={cpus}"], "1" if gpus else None, work / "second.log")
    import ray

    deadline = time.monotonic() + 120
    while True:  # the head's GCS may not answer yet
        try:
            ray.init(address=address, log_to_driver=False)
            break
        except (ConnectionError, RuntimeError):
            if time.monotonic() > deadline or head.proc.poll() is not None:
                raise
            time.sleep(1)
    wait_for(ray, 2)
    return ray, address, head, second


def summary(name: str, df, wall: float, gpus: int, nodes: int, expected: int, node_lost: bool = False, **extra) -> dict:
    keys = list(zip(df["model"], df["problem"], df["sample"]))
    unique = len(set(keys))
    return {"pass": name, "gpus": gpus, "nodes": nodes, "node_lost": node_lost, "candidates": len(df), "samples_in_batch": expected,
            "unique_sample_keys": unique, "records_lost": expected - unique, "records_duplicated": len(keys) - unique,
            "wall_s": round(wall, 1),
            "candidates_per_hour": round(len(df) / wall * 3600, 1), "candidates_per_gpu_hour": round(len(df) / wall * 3600 / gpus, 1) if gpus else None,
            "outcomes": df["failure"].fillna("none").value_counts().to_dict(), "build_cached_share": round(float(df["build_cached"].fillna(False).mean()), 3),
            **extra}


def verdicts(df) -> dict:
    return {f"{p}#{s}": (bool(c), f) for p, s, c, f in zip(df["problem"], df["sample"], df["correct"], df["failure"].fillna("none"))}


def differ(a: dict, b: dict) -> list:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def killer(events: list, node: Node, node_id: str, after: int, out: dict) -> None:
    while "kill_t" not in out:
        seen = list(events)
        recorded = sum(1 for e in seen if e["event"] == "recorded")
        mine = {e["judge"] for e in seen if e["event"] == "judge_ready" and e["node"] == node_id}
        if recorded >= after and any(e["event"] == "recorded" and e["judge"] in mine for e in seen):
            out["kill_t"] = time.time()
            node.kill()
            return
        if out.get("stop"):
            return
        time.sleep(0.05)


def fault_pass(ray, problems, model, opts, root: Path, second: Node, kill_at: float, gpus: bool) -> dict:
    from kbench_lib.cluster import run_batch_on_ray

    second_id = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and (n["Resources"].get("GPU") or not gpus)
                     and not n["Resources"].get("node:__internal_head__"))
    stems = {p.path.stem for p in problems}
    n_jobs = sum(1 for f in Path(model.split(":", 1)[1]).glob("*.py") if f.stem.split("__")[0] in stems)
    events, out = [], {}
    t = threading.Thread(target=killer, args=(events, second, second_id, int(n_jobs * kill_at), out), daemon=True)
    t.start()
    started = time.time()
    run_batch_on_ray(problems, model, run_id="fault", runs_root=root, opts=opts, progress=False, recover_timeout_s=300, events=events)
    wall = time.time() - started
    keep_events(events, root / "fault")
    out["stop"] = True
    died = [e for e in events if e["event"] == "judge_died"]
    first_after = None
    if died:
        running = {tuple(k) for k in died[0]["running"]}
        later = [e["t"] for e in events if e["event"] == "recorded" and e["t"] > died[0]["t"] and tuple(e["key"]) in running]
        first_after = min(later) if later else None
    kill_t = out.get("kill_t")
    return {"kill_after_s": round(kill_t - started, 1) if kill_t else None,
            "loss_noticed_after_s": round(died[0]["t"] - kill_t, 2) if died and kill_t else None,
            "first_requeued_recorded_after_s": round(first_after - kill_t, 2) if first_after and kill_t else None,
            "requeued": died[0]["requeued"] if died else 0, "judges_died": len(died),
            "duplicates_dropped": sum(1 for e in events if e["event"] == "duplicate_dropped"),
            "recorded_by_node": _count_by_node(events), "taken_back": taken_back(events),
            "judges": judges_timeline(events, started), "wall": wall}


def taken_back(events: list) -> int:
    """Jobs a judge gave back unstarted to one that had run dry (:meth:`kbench_lib.cluster.driver.Batch.take_back_for_idle`)."""
    return sum(len(e["keys"]) for e in events if e["event"] == "taken_back")


def keep_events(events: list, folder: Path) -> None:
    """The driver's events of a pass beside its records (``_events.jsonl``): where its time went."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_events.jsonl").write_text("".join(json.dumps(e, default=str) + "\n" for e in events))


def judges_timeline(events: list, started: float) -> list[dict]:
    """Per judge, seconds from the pass's start: when it was ready, sent its first job, recorded its
    first and last verdict, and how many it recorded: where a pass loses time against the local one;
    and the cores its workers kept to."""
    out: dict = {}
    for e in events:
        j = e.get("judge")
        if j is None:
            continue
        row = out.setdefault(j, {"judge": j, "recorded": 0})
        t = round(e["t"] - started, 1)
        if e["event"] == "judge_ready":
            row["ready_s"] = t
            row["threads"] = e.get("threads")  # torch's threads in the judge
            row["cpus"] = e.get("cpus")  # the cores its workers keep to (None: every core of its node)
        elif e["event"] == "dispatched":
            row.setdefault("first_sent_s", t)
        elif e["event"] == "recorded":
            row.setdefault("first_recorded_s", t)
            row["last_recorded_s"] = t
            row["recorded"] += 1
        elif e["event"] == "judge_died":
            row["died_s"] = t
    return [out[k] for k in sorted(out)]


def _count_by_node(events: list) -> dict:
    out: dict = {}
    for e in events:
        if e["event"] == "recorded":
            out[e["node"][:12]] = out.get(e["node"][:12], 0) + 1
    return out


def write(row: dict, out_dir: str, device: str, timing_budget: float, run_timeout: float) -> None:
    """Append one pass's row to ``<out-dir>/<device-slug>/ray_cluster-<date>.json``."""
    gpus = 0
    if device == "cuda":
        import torch

        gpus = torch.cuda.device_count()
    row.update(device_name=device_name(device), date=dt.date.today().isoformat(), timing_budget_s=timing_budget,
               run_timeout_s=run_timeout, git_sha=os.environ.get("KBENCH_GIT_SHA", ""),
               machine=f"{gpus}x {device_name(device)}, {os.cpu_count()} cores" if gpus else f"{os.cpu_count()} cores",
               command="python benchmarks/ray_cluster.py " + " ".join(sys.argv[1:]))
    print(json.dumps(row), flush=True)
    dest = Path(out_dir) / device_slug(device)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"ray_cluster-{dt.date.today().isoformat()}.json"
    old = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps(old + [row], indent=1))
    print("written:", path, flush=True)


def compared(row: dict, root: Path) -> dict:
    """``row`` with its verdicts set beside the local one-GPU pass's, where one was recorded."""
    if row["pass"] == "local" or not (root / "local").exists():
        return row
    local = read_records(root, "local")
    row["verdicts_differing_from_local"] = differ(verdicts(local), verdicts(read_records(root, row["pass"])))[:50]
    row["verdicts_equal_local"] = not row["verdicts_differing_from_local"]
    wall_file = root / "local" / "_wall_s"
    wall = float(wall_file.read_text()) if wall_file.exists() else None
    if wall:
        row["throughput_vs_one_gpu"] = round(row["candidates_per_hour"] / (len(local) / wall * 3600), 2)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", nargs="+", choices=["local", "local2", "ray", "fault"], default=["local", "local2", "ray", "fault"])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a check of the benchmark, not a measurement")
    ap.add_argument("--min-candidates", type=int, default=100)
    ap.add_argument("--filter", nargs="*", default=None, help="keep problems whose key contains any of these")
    ap.add_argument("--timing-budget", type=float, default=1.0)
    ap.add_argument("--run-timeout", type=float, default=15.0, help="run and build limit per candidate (the hanging ones run into it)")
    ap.add_argument("--build-jobs", type=int, default=12)
    ap.add_argument("--cpus-per-node", type=int, default=8)
    ap.add_argument("--kill-at", type=float, default=0.3, help="share of the batch recorded before the second node is killed")
    ap.add_argument("--work", default=None, help="a folder kept between calls: the batch, its builds' warm-up marker and "
                    "the records (default: a new temporary folder, removed at the end)")
    ap.add_argument("--out-dir", default=str(REPO / "results" / "benchmarks"))
    a = ap.parse_args()
    gpus = a.device == "cuda"
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="ray-cluster-"))
    work.mkdir(parents=True, exist_ok=True)
    batch_file = work / "batch.json"
    if batch_file.exists():  # the same laid-out batch as an earlier call's
        problems_paths, model = json.loads(batch_file.read_text())
        problems = [load_problem(Path(p)) for p in problems_paths]
    else:
        problems, model = laid_out(work, a.min_candidates, a.filter, a.device)
        batch_file.write_text(json.dumps([[str(p.path) for p in problems], model]))
    stems = {p.path.stem for p in problems}
    expected = sum(1 for f in Path(model.split(":", 1)[1]).glob("*.py") if f.stem.split("__")[0] in stems)
    print(f"batch: {len(problems)} problems, {expected} candidates, work {work}", flush=True)
    opts = JudgeOptions(device=a.device, timing_budget_s=a.timing_budget, run_timeout_s=a.run_timeout, build_timeout_s=a.run_timeout * 20)
    if not (work / "builds-warm").exists():
        warm = JudgeOptions(device=a.device, timing=False, run_timeout_s=a.run_timeout, build_timeout_s=a.run_timeout * 20)
        seconds = in_fresh_process(judged_batch, batch_file, model, "warm-builds", work / "warm", warm, a.build_jobs, None)
        (work / "builds-warm").write_text(f"{seconds:.1f}")
        print(f"builds warmed in {seconds:.1f} s", flush=True)
    root, nodes = work / "runs", []
    n_gpu = 2 if gpus else 0

    def finish(row: dict) -> None:
        write(compared(row, root), a.out_dir, a.device, a.timing_budget, a.run_timeout)

    try:
        for name, lanes in (("local", 1), ("local2", 2)):
            if name in a.passes:
                shutil.rmtree(root / name, ignore_errors=True)
                wall = in_fresh_process(judged_batch, batch_file, model, name, root, opts, a.build_jobs, lanes if gpus else None)
                (root / name / "_wall_s").write_text(f"{wall}")
                finish(summary(name, read_records(root, name), wall, lanes if gpus else 0, 1, expected, fresh_process=True))
        if {"ray", "fault"} & set(a.passes):
            ray, address, head, second = start_cluster(work, a.cpus_per_node, gpus)
            nodes = [head, second]
            if "ray" in a.passes:  # as runner.run_batch(..., ray=address) runs it, with the driver's events kept
                from kbench_lib.cluster import run_batch_on_ray

                shutil.rmtree(root / "ray", ignore_errors=True)
                events, t0 = [], time.time()
                run_batch_on_ray(problems, model, address=address, run_id="ray", runs_root=root, opts=opts, progress=False,
                                 events=events)
                wall = time.time() - t0
                keep_events(events, root / "ray")
                finish(summary("ray", read_records(root, "ray"), wall, n_gpu, 2, expected, taken_back=taken_back(events),
                               judges=judges_timeline(events, t0)))
            if "fault" in a.passes:
                shutil.rmtree(root / "fault", ignore_errors=True)
                f = fault_pass(ray, problems, model, opts, root, second, a.kill_at, gpus)
                finish(summary("fault", read_records(root, "fault"), f.pop("wall"), n_gpu, 2, expected, node_lost=True, **f))
    finally:
        if nodes:
            import ray

            ray.shutdown()
        for n in reversed(nodes):
            n.kill()
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
