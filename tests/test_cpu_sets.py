"""CPU cores per GPU (kbench_lib.core.cpu_sets): each GPU of a batch over several gets cores of its own,
its fork server (and so every worker forked from it) runs on them, and torch sizes its thread pool
to them."""
import os
import subprocess
import sys
import threading

import pytest

from kbench_lib.core import cpu_sets
from kbench_lib.isolation import server_pool
from kbench_lib.core.cpu_sets import format_cpulist, parse_cpulist, split


def test_cpulists_read_and_written():
    assert parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("") == set()
    assert format_cpulist({3, 1, 2}) == "1,2,3"
    assert parse_cpulist(format_cpulist(range(5))) == set(range(5))


def test_gpus_on_their_own_numa_nodes_keep_their_local_cores():
    allowed = set(range(32))
    local = {"cuda:0": set(range(0, 16)), "cuda:1": set(range(16, 32)) | {40}}  # 40: not this process's
    assert split(["cuda:0", "cuda:1"], local, allowed) == {"cuda:0": tuple(range(16)), "cuda:1": tuple(range(16, 32))}


def test_gpus_sharing_their_cores_split_them_evenly_in_runs():
    allowed = set(range(32))
    four = [f"cuda:{i}" for i in range(4)]
    sets = split(four, {d: None for d in four}, allowed)  # unknown: every core is everyone's
    assert [sets[d] for d in four] == [tuple(range(i * 8, i * 8 + 8)) for i in range(4)]
    # two NUMA nodes, two GPUs on each
    local = {"cuda:0": set(range(16)), "cuda:1": set(range(16)), "cuda:2": set(range(16, 32)), "cuda:3": set(range(16, 32))}
    sets = split(four, local, allowed)
    assert sets["cuda:1"] == tuple(range(8, 16)) and sets["cuda:2"] == tuple(range(16, 24))
    assert not set(sets["cuda:0"]) & set(sets["cuda:1"])


def _fake_sysfs(root, devices: dict[str, tuple[str, str, str | None]]):
    """A /sys/bus/pci/devices of ``devices``: address -> (vendor, class, local_cpulist or None)."""
    for address, (vendor, klass, cpulist) in devices.items():
        d = root / address
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "class").write_text(klass + "\n")
        if cpulist is not None:
            (d / "local_cpulist").write_text(cpulist + "\n")
    return root


def test_a_judge_that_sees_one_gpu_of_several_takes_that_gpus_share_of_the_host(tmp_path, monkeypatch):
    """A Ray judge sees one GPU (its ``cuda:0``): its share comes from every NVIDIA GPU of the host in
    sysfs, split as a local batch on all of them splits the cores, so the judges of the other GPUs
    take the other shares; a network card or an NVIDIA bridge is no GPU."""
    sysfs = _fake_sysfs(tmp_path, {
        "0000:00:02.0": ("0x1af4", "0x020000", "0-31"),  # a network card
        "0000:1b:00.0": ("0x10de", "0x030200", "0-31"),  # GPUs: 3D controllers
        "0000:9b:00.0": ("0x10de", "0x030200", "0-31"),
        "0000:a0:00.0": ("0x10de", "0x068000", "0-31"),  # an NVIDIA bridge (NVSwitch), class 0x0680
    })
    assert cpu_sets.host_gpus(sysfs) == {"0000:1b:00.0": set(range(32)), "0000:9b:00.0": set(range(32))}
    monkeypatch.setattr(cpu_sets, "allowed_cpus", lambda: set(range(32)))
    for address, cores in (("0000:1b:00.0", range(16)), ("0000:9b:00.0", range(16, 32))):
        monkeypatch.setattr(cpu_sets, "pci_address", lambda device, a=address: a)
        assert cpu_sets.host_share("cuda:0", sysfs) == tuple(cores)
    monkeypatch.setattr(cpu_sets, "pci_address", lambda device: "0000:77:00.0")  # not among them
    assert cpu_sets.host_share("cuda:0", sysfs) is None
    # GPUs on their own NUMA nodes keep their local cores
    numa = _fake_sysfs(tmp_path / "numa", {"0000:1b:00.0": ("0x10de", "0x030200", "0-15"), "0000:9b:00.0": ("0x10de", "0x030200", "16-31")})
    monkeypatch.setattr(cpu_sets, "pci_address", lambda device: "0000:9b:00.0")
    assert cpu_sets.host_share("cuda:0", numa) == tuple(range(16, 32))


def test_a_judge_on_a_host_of_one_gpu_or_too_few_cores_keeps_every_core(tmp_path, monkeypatch):
    assert cpu_sets.pci_address("cpu") is None
    one = _fake_sysfs(tmp_path / "one", {"0000:1b:00.0": ("0x10de", "0x030200", "0-31")})
    monkeypatch.setattr(cpu_sets, "pci_address", lambda device: "0000:1b:00.0")
    monkeypatch.setattr(cpu_sets, "allowed_cpus", lambda: set(range(32)))
    assert cpu_sets.host_share("cuda:0", one) is None
    eight = _fake_sysfs(tmp_path / "eight", {f"0000:{i:02x}:00.0": ("0x10de", "0x030200", None) for i in range(0x1b, 0x23)})
    monkeypatch.setattr(cpu_sets, "allowed_cpus", lambda: set(range(12)))  # one core each: under MIN_CORES
    assert cpu_sets.host_share("cuda:0", eight) is None
    assert cpu_sets.host_gpus(tmp_path / "no_such_folder") == {}


def test_nothing_is_pinned_for_one_gpu_or_too_few_cores():
    assert split(["cuda:0"], {"cuda:0": {0, 1}}, {0, 1, 2, 3}) == {}
    assert split(["cuda:0", "cuda:1", "cuda:2"], {}, {0, 1, 2, 3, 4}) == {}  # a share of one core
    assert cpu_sets.gpu_cpu_sets(["cpu", "cpu"]) == {}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_a_pinned_process_sizes_torchs_thread_pool_to_its_cores():
    one = min(os.sched_getaffinity(0))
    code = ("import os; from kbench_lib.core.cpu_sets import apply_from_env; apply_from_env(); import torch; "
            "print(sorted(os.sched_getaffinity(0)), torch.get_num_threads())")
    env = {**os.environ, cpu_sets.ENV: str(one)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [f"[{one}]", "1"]


@pytest.mark.skipif(not server_pool.enabled(), reason="fork servers run on Linux only")
def test_a_pinned_threads_fork_server_runs_on_its_cores(monkeypatch):
    monkeypatch.setenv("TZ", f"UTC0-cpus-{os.getpid()}")  # this test's server, told apart from the session's
    before = os.sched_getaffinity(0)
    one = min(before)
    got = {}

    def pinned():
        server_pool.pin_thread({one})
        got["self"] = os.sched_getaffinity(0)
        got["env"] = server_pool.server_env(False)
        got["server"] = server_pool.server(False)

    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    server = got["server"]
    assert got["env"][cpu_sets.ENV] == str(one)
    assert got["self"] == {one} and len(os.sched_getaffinity(0)) == len(before)  # the thread itself; the process is not
    assert server is not None
    try:
        assert os.sched_getaffinity(server.proc.pid) == {one}  # and so every worker it forks
        # its torch keeps to it too (the zygote that forked it imported torch on every core)
        assert server.threads == 1
        # where its start went: the zygote's warm-up (this environment's first), then the fork
        phases = ("torch", "worker", "warm_imports", "warm_keys", "probes")
        assert set(server.start_s) == {"total", "zygote", "fork", *phases} and all(server.start_s[k] >= 0 for k in phases)
        assert server.start_s["total"] >= server.start_s["fork"] - 0.01  # from the fork asked for to its hello
        assert server.start_s["zygote"] >= sum(server.start_s[k] for k in phases) - 0.01
    finally:
        server.close()
    assert cpu_sets.ENV not in server_pool.server_env(False)  # this thread is not pinned


@pytest.mark.skipif(not server_pool.enabled(), reason="fork servers run on Linux only")
def test_servers_started_ahead_for_a_batch_are_the_ones_its_threads_use(monkeypatch):
    """runner.start_servers: one server per device of the batch, unowned, with the environment its
    judging thread will ask for; the thread takes it instead of starting its own."""
    from kbench_lib.batch import runner

    monkeypatch.setenv("TZ", f"UTC0-ahead-{os.getpid()}")
    runner.start_servers(["cpu"])
    ours = [e for e in server_pool._ENTRIES if e.env.get("TZ") == f"UTC0-ahead-{os.getpid()}"]
    assert len(ours) == 1 and ours[0].owner is None and ours[0].started.done()
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("s", server_pool.server(False)))
    t.start()
    t.join()
    try:
        assert got["s"] is ours[0].started.result() and got["s"] is not None
    finally:
        got["s"].close()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_processes_started_for_a_pinned_thread_get_every_core_of_the_process():
    """The spawner thread (whose children are the zygotes) may be started by a pinned judging
    thread: it takes every core of the process back, so a zygote, and each server it forks, can
    keep to any GPU's cores."""
    every = os.sched_getaffinity(0)
    got = {}

    def pinned():
        server_pool.pin_thread({min(every)})
        spawner = server_pool._Spawner()  # its thread is started by this pinned thread
        proc = spawner.popen([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], stdout=subprocess.PIPE, text=True)
        got["child"] = proc.communicate(timeout=60)[0].strip()

    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    assert got["child"] == str(sorted(every))


@pytest.mark.gpu
def test_a_judge_seeing_one_gpu_takes_the_cores_a_local_batch_gives_that_gpu():
    """On a host of two GPUs or more, all of them visible (skipped otherwise): a process that sees
    only the second GPU (as a Ray judge does) takes the cores a local batch on every GPU gives
    that GPU's workers, and none of the first GPU's."""
    import torch

    gpus = cpu_sets.host_gpus()
    n = torch.cuda.device_count()
    if n < 2 or n != len(gpus) or os.environ.get("CUDA_VISIBLE_DEVICES"):
        pytest.skip("needs a host of two GPUs or more, every one visible")
    local = cpu_sets.gpu_cpu_sets([f"cuda:{i}" for i in range(n)])
    if not local:
        pytest.skip("too few cores to split among this host's GPUs")
    code = "from kbench_lib.core import cpu_sets; print(cpu_sets.format_cpulist(cpu_sets.host_share('cuda:0') or ()))"
    seen = subprocess.run([sys.executable, "-c", code], env={**os.environ, "CUDA_VISIBLE_DEVICES": "1"}, capture_output=True,
                          text=True, timeout=120, check=True).stdout.strip()
    assert parse_cpulist(seen) == set(local["cuda:1"]) and not parse_cpulist(seen) & set(local["cuda:0"])
