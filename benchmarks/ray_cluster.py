"""The same batch on one GPU and on a two-node Ray cluster, then with the second node killed
mid-batch. Not a test: run it on a machine with two GPUs.

    python benchmarks/ray_cluster.py --out-dir $OUT                     # every pass, in one call
    python benchmarks/ray_cluster.py --out-dir $OUT --passes local      # or one pass per call
    python benchmarks/ray_cluster.py --out-dir $OUT --passes ray fault

Two Ray nodes on one host stand in for two machines: a head started with ``ray start --head``
seeing only GPU 0 (``CUDA_VISIBLE_DEVICES=0``) and a second ``ray start --address=...`` seeing
only GPU 1, each its own raylet with its own processes, both started here (``--block``, each in
its own session) and ended here. The batch is benchmarks/throughput.py's (level-1 and level-2
reference solutions, the adversarial suites, the bad fixtures), its solutions laid out again as
further samples until it has ``--min-candidates``; builds are warmed once first (one build cache,
shared by both nodes of this host).

Passes: ``local`` (runner.run_batch on one GPU, the baseline), ``ray`` (both nodes, one judging
actor each), ``fault`` (both nodes; the second node's processes are killed once ``--kill-at`` of
the batch is recorded). Reported per pass: candidates, wall, candidates per hour and per GPU-hour;
for ``fault`` also when the loss was noticed (kill -> judge_died), when the first job it was
running was recorded elsewhere, how many jobs went back in line, and whether every sample was
recorded exactly once. Verdicts (correct, failure) are compared with the local pass by sample
key. Written to ``<out-dir>/<device-slug>/ray_cluster-<date>.json`` (appended to).
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
from kbench_lib import runner  # noqa: E402
from kbench_lib.judge import JudgeOptions  # noqa: E402
from kbench_lib.provenance import device_name, device_slug  # noqa: E402
from kbench_lib.records import read_records  # noqa: E402


def laid_out(work: Path, min_candidates: int, keep) -> tuple[list, str]:
    """(problems, folder model) of throughput.py's batch, solutions repeated until it is large enough."""
    problems, models = throughput.batch(work, "cuda", False, keep)
    folder = Path(models[0].split(":", 1)[1])
    solutions = sorted(folder.glob("*__solution.py"))
    n, copy = len(list(folder.glob("*.py"))), 0
    while n < min_candidates and solutions:
        copy += 1
        for f in solutions:
            shutil.copy(f, f.with_name(f.name.replace("__solution.py", f"__solution_copy{copy}.py")))
            n += 1
    return problems, models[0]


class Node:
    """One ``ray start --block`` process in its own session, seeing one GPU."""

    def __init__(self, args: list[str], gpu: str, log: Path):
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
        self.log = open(log, "w")
        ray_cli = str(Path(sys.executable).with_name("ray"))  # the ray command of this interpreter's environment
        self.proc = subprocess.Popen([ray_cli, "start", "--block", "--num-gpus=1", "--disable-usage-stats", *args], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL to every process of the node's session (raylet, its workers, the judging actor)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()


def wait_for(ray, gpus: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if int(ray.cluster_resources().get("GPU", 0)) >= gpus:
            return
        time.sleep(0.5)
    raise RuntimeError(f"the cluster did not reach {gpus} GPUs in {timeout:g} s")


def start_cluster(work: Path, cpus: int):
    head = Node(["--head", "--port=6389", f"--num-cpus={cpus}", "--include-dashboard=false"], "0", work / "head.log")
    address_file = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    deadline = time.monotonic() + 120
    while not address_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    address = address_file.read_text().strip()
    second = Node([f"--address={address}", f"--num-cpus={cpus}"], "1", work / "second.log")
    import ray

    ray.init(address=address, log_to_driver=False)
    wait_for(ray, 2)
    return ray, address, head, second


def summary(name: str, df, wall: float, gpus: int, **extra) -> dict:
    keys = list(zip(df["model"], df["problem"], df["sample"]))
    return {"pass": name, "gpus": gpus, "candidates": len(df), "unique_sample_keys": len(set(keys)), "wall_s": round(wall, 1),
            "candidates_per_hour": round(len(df) / wall * 3600, 1), "candidates_per_gpu_hour": round(len(df) / wall * 3600 / gpus, 1),
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


def fault_pass(ray, problems, model, opts, root: Path, second: Node, kill_at: float) -> dict:
    from kbench_lib.cluster import run_batch_on_ray

    second_id = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("GPU") and not n["Resources"].get("node:__internal_head__"))
    n_jobs = sum(1 for _ in Path(model.split(":", 1)[1]).glob("*.py"))
    events, out = [], {}
    t = threading.Thread(target=killer, args=(events, second, second_id, int(n_jobs * kill_at), out), daemon=True)
    t.start()
    started = time.time()
    run_batch_on_ray(problems, model, run_id="fault", runs_root=root, opts=opts, progress=False, recover_timeout_s=300, events=events)
    wall = time.time() - started
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
            "recorded_by_node": _count_by_node(events), "wall": wall}


def _count_by_node(events: list) -> dict:
    out: dict = {}
    for e in events:
        if e["event"] == "recorded":
            out[e["node"][:12]] = out.get(e["node"][:12], 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", nargs="+", choices=["local", "ray", "fault"], default=["local", "ray", "fault"])
    ap.add_argument("--min-candidates", type=int, default=100)
    ap.add_argument("--filter", nargs="*", default=None, help="keep problems whose key contains any of these")
    ap.add_argument("--timing-budget", type=float, default=1.0)
    ap.add_argument("--run-timeout", type=float, default=15.0, help="run and build limit per candidate (the hanging ones run into it)")
    ap.add_argument("--build-jobs", type=int, default=12)
    ap.add_argument("--cpus-per-node", type=int, default=8)
    ap.add_argument("--kill-at", type=float, default=0.3, help="share of the batch recorded before the second node is killed")
    ap.add_argument("--out-dir", default=str(REPO / "results" / "benchmarks"))
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ray-cluster-"))
    problems, model = laid_out(work, a.min_candidates, a.filter)
    opts = JudgeOptions(device="cuda", timing_budget_s=a.timing_budget, run_timeout_s=a.run_timeout, build_timeout_s=a.run_timeout * 20)
    runner.run_batch(problems, model, run_id="warm-builds", runs_root=work / "warm", progress=False, prebuild_jobs=a.build_jobs,
                     opts=JudgeOptions(device="cuda", timing=False, run_timeout_s=a.run_timeout, build_timeout_s=a.run_timeout * 20))
    root, results, nodes = work / "runs", [], []
    try:
        if "local" in a.passes:
            t0 = time.time()
            runner.run_batch(problems, model, run_id="local", runs_root=root, opts=opts, progress=False, prebuild_jobs=a.build_jobs, gpus=1)
            results.append(summary("local", read_records(root, "local"), time.time() - t0, 1))
        if {"ray", "fault"} & set(a.passes):
            ray, address, head, second = start_cluster(work, a.cpus_per_node)
            nodes = [head, second]
            if "ray" in a.passes:
                t0 = time.time()
                runner.run_batch(problems, model, run_id="ray", runs_root=root, opts=opts, progress=False, ray=address)
                results.append(summary("ray", read_records(root, "ray"), time.time() - t0, 2))
            if "fault" in a.passes:
                f = fault_pass(ray, problems, model, opts, root, second, a.kill_at)
                results.append(summary("fault", read_records(root, "fault"), f.pop("wall"), 2, **f))
    finally:
        if nodes:
            import ray

            ray.shutdown()
        for n in reversed(nodes):
            n.kill()
    base = {r["pass"]: r for r in results}
    if "local" in base:
        local = verdicts(read_records(root, "local"))
        for r in results[1:]:
            r["verdicts_differing_from_local"] = differ(local, verdicts(read_records(root, r["pass"])))[:50]
            r["throughput_vs_one_gpu"] = round(r["candidates_per_hour"] / base["local"]["candidates_per_hour"], 2)
    for r in results:
        r.update(device_name=device_name("cuda"), date=dt.date.today().isoformat(), timing_budget_s=a.timing_budget, run_timeout_s=a.run_timeout)
        print(json.dumps(r), flush=True)
    dest = Path(a.out_dir) / device_slug("cuda")
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"ray_cluster-{dt.date.today().isoformat()}.json"
    old = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps(old + results, indent=1))
    print("written:", path)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
