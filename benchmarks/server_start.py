"""How long a judging thread's fork server takes to start, phase by phase (issue 13).

A batch's first worker on each GPU waits for its lane's fork server (kbench_lib.forkserver): torch
and the worker imported, the warm imports, Triton's keys, the isolation probes (a forked child
each, which creates a CUDA context). This starts ``--servers`` of them at once, each pinned to its
GPU's cores as a batch over that many GPUs pins them (kbench_lib.cpu_sets), optionally while this
process prepares problem references on each GPU as the lanes do meanwhile (``--load``), and
prints each server's phases as its hello reported them. One JSON line per round.

``--how zygote`` (what server_pool does since 2026-11-27): one zygote warms up, then forks each
server; ``--how separate`` (before): each server an interpreter of its own, warming up alone.

    python3 benchmarks/server_start.py --servers 1 2 --rounds 2 --load off on --how zygote separate
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from kbench_lib import cpu_sets, server_pool  # noqa: E402
from kbench_lib.forkserver import ForkServer, Zygote  # noqa: E402
from kbench_lib.judge import JudgeOptions, prepare_problem  # noqa: E402
from kbench_lib.problems import discover  # noqa: E402


def prepare_until(stop: threading.Event, device: str, problems: list) -> int:
    """References of ``problems`` prepared on ``device`` one after another, each let go again, until
    ``stop`` (as a judging thread prepares them); returns how many."""
    n = 0
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    while not stop.is_set():
        prepare_problem(problems[n % len(problems)], JudgeOptions(device=device), device).release()
        n += 1
    return n


def one_round(servers: int, load: bool, problems: list, how: str = "zygote") -> dict:
    devices = [f"cuda:{i}" for i in range(servers)]
    pins = cpu_sets.gpu_cpu_sets(devices)
    envs = [server_pool.server_env(True, pins.get(d)) for d in devices]
    stop = threading.Event()
    loaders = [threading.Thread(target=prepare_until, args=(stop, d, problems), daemon=True) for d in devices] if load else []
    for t in loaders:
        t.start()
    started: list = [None] * servers
    zygote: list = []
    t0 = time.monotonic()
    if how == "zygote":
        zygote.append(Zygote(True, server_pool.server_env(True, None)))

    def start(i: int) -> None:
        if zygote:
            started[i] = ForkServer(True, zygote=zygote[0], cpus=envs[i].get(cpu_sets.ENV))
        else:
            started[i] = ForkServer(True, envs[i])

    threads = [threading.Thread(target=start, args=(i,)) for i in range(servers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    stop.set()
    for t in loaders:
        t.join()
    out = {"servers": servers, "how": how, "load": load, "wall_s": round(wall, 3),
           "pinned": {d: cpu_sets.format_cpulist(c) for d, c in pins.items()},
           "start_s": [s.start_s for s in started], "threads": [s.threads for s in started]}
    for s in started + zygote:
        s.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--load", nargs="+", choices=["off", "on"], default=["off"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--how", nargs="+", choices=["zygote", "separate"], default=["zygote", "separate"])
    ap.add_argument("--out", default=None, help="also append the JSON lines to this file")
    a = ap.parse_args()
    problems = [p for p in discover(REPO / "problems") if p.level == "level1"][:8]
    torch.empty(1, device="cuda")  # the judge's own runtime, as in a batch
    for n in a.servers:
        if n > torch.cuda.device_count():
            continue
        for load in a.load:
            for how in a.how:
                for _ in range(a.rounds):
                    line = json.dumps(one_round(n, load == "on", problems, how))
                    print(line, flush=True)
                    if a.out:
                        with open(a.out, "a") as f:
                            f.write(line + "\n")


if __name__ == "__main__":
    main()
