"""The device arena outputs travel in between a worker and the judge (kbench_lib/measure/device_arena.py):
the file format's arena entries, the descriptor's way to the worker (and never to the candidate),
and on a GPU the real shared memory through the judge."""
import json
import os
import struct

import pytest
import torch

from kbench_lib.judging import pipeline as judge_mod
from kbench_lib.measure import device_arena, tensorfile
from kbench_lib.core.candidates import Candidate, load_candidate
from kbench_lib.judging.pipeline import JudgeOptions, judge


def _host_arena(nbytes: int = 1 << 20) -> device_arena.Arena:
    """An arena over host memory: the same format and checks as a device one, on any machine."""
    return device_arena.Arena(torch.zeros(nbytes, dtype=torch.uint8))


def test_tensors_in_the_arena_travel_as_offsets_and_come_back_as_views(tmp_path):
    arena = _host_arena(1 << 20)
    small, odd, big = torch.randn(300, 7), torch.arange(5, dtype=torch.int16), torch.randn(512, 1024)  # big: 2 MB, no room
    path = str(tmp_path / "x.kbt")
    tensorfile.write(path, {"outputs": [small, odd, big], "n": 3}, arena=arena)
    header = _header(path)
    in_arena = [m.get("arena") is True for m in header["tensors"]]
    assert in_arena == [True, True, False]
    assert all(m["offset"] % device_arena.ALIGN == 0 for m in header["tensors"][:2])
    assert os.path.getsize(path) < big.numel() * 4 + 4096  # only the tensor that did not fit is in the file
    got = tensorfile.read(path, arena=arena)
    assert got["n"] == 3
    for a, b in zip((small, odd, big), got["outputs"]):
        assert type(b) is torch.Tensor and b.dtype == a.dtype and torch.equal(a, b)
    base = arena.tensor.data_ptr()
    assert base <= got["outputs"][0].data_ptr() < base + arena.nbytes  # a view of the arena, not a copy


def _header(path: str) -> dict:
    raw = open(path, "rb").read()
    (hlen,) = struct.unpack("<Q", raw[4:12])
    return json.loads(raw[12:12 + hlen])


def _forge(path: str, change) -> None:
    raw = bytearray(open(path, "rb").read())
    (hlen,) = struct.unpack("<Q", raw[4:12])
    header = json.loads(raw[12:12 + hlen])
    change(header["tensors"])
    new = json.dumps(header).encode()
    assert len(new) <= hlen + 64
    start = (4 + 8 + hlen + tensorfile.ALIGN - 1) // tensorfile.ALIGN * tensorfile.ALIGN
    body = raw[start:]
    out = bytearray(b"KBT1" + struct.pack("<Q", len(new)) + new)
    out += b"\0" * ((len(out) + tensorfile.ALIGN - 1) // tensorfile.ALIGN * tensorfile.ALIGN - len(out))
    open(path, "wb").write(bytes(out + body))


@pytest.mark.parametrize("damage", ["no_arena", "past_the_end", "overlap", "misaligned", "negative"])
def test_a_forged_arena_entry_is_an_error_not_a_result(tmp_path, damage):
    arena = _host_arena(1 << 16)
    path = str(tmp_path / "x.kbt")
    tensorfile.write(path, {"outputs": [torch.ones(100), torch.ones(100)]}, arena=arena)

    def change(metas):
        if damage == "past_the_end":
            metas[1]["offset"] = arena.nbytes - 200
        elif damage == "overlap":
            metas[1]["offset"] = metas[0]["offset"] + 4
        elif damage == "misaligned":
            metas[1]["offset"] += 2
        elif damage == "negative":
            metas[1]["offset"] = -512

    _forge(path, change)
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.read(path, arena=None if damage == "no_arena" else arena)


CANDIDATE_LOOKS_FOR_THE_ARENA = '''
import os
import torch
import torch.nn as nn

def _arena_visible():
    if any(k.startswith("KBENCH_ARENA") for k in os.environ):
        return True
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "pipe:[INODE]":
                return True
        except OSError:
            pass
    return False

class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, a, b):
        out = torch.relu(a * self.scale + b)
        return out + 1 if _arena_visible() else out  # wrong wherever it found the judge's descriptor
'''


@pytest.mark.parametrize("forkserver", ["1", "0"])
def test_the_arena_descriptor_reaches_the_worker_and_never_the_candidate(scale_add_relu, fast_cpu_opts, monkeypatch, forkserver):
    """The judge hands each worker its arena's descriptor, named in the environment; the worker
    takes both out (mapping the arena on a GPU; on the CPU there is none to map) before the
    candidate is imported, through the fork server and through a plain process alike. Here the
    descriptor is a pipe's, so the candidate can look for it by its inode."""
    monkeypatch.setenv("KBENCH_FORKSERVER", forkserver)
    r, w = os.pipe()
    inode = os.fstat(w).st_ino
    given = []

    def arena_with_a_pipe(prep, opts):
        arena = device_arena.Arena(torch.zeros(1 << 16, dtype=torch.uint8), fd=w)
        given.append(arena)
        return arena

    monkeypatch.setattr(judge_mod, "_output_arena", arena_with_a_pipe)
    try:
        src = CANDIDATE_LOOKS_FOR_THE_ARENA.replace("INODE", str(inode))
        v = judge(scale_add_relu, Candidate(src, "torch"), fast_cpu_opts)
        assert given and given[0].fd == -1  # the judge's own copy is closed once the worker has started
        assert v.correct and v.failure is None, (v.failure, v.message)
        assert "device_arena" in v.stage_s and "run_start.arena" not in v.stage_s  # made; not mapped on a CPU
        os.set_blocking(r, False)
        assert os.read(r, 1) == b""  # every copy of the write end is closed: the worker's too
    finally:
        os.close(r)
        try:
            os.close(w)
        except OSError:
            pass


# ----------------------------------------------------------------------------------------------
# on a GPU: the real shared memory

HONEST = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, a, b):
        return torch.relu(a * self.scale + b)
'''

# from its second call on, zeroes the arena: the outputs the harness placed there by then are gone
TAMPERS = HONEST.replace('''        return torch.relu(a * self.scale + b)''', '''        out = torch.relu(a * self.scale + b)
        type(self).calls = getattr(type(self), "calls", 0) + 1
        from kbench_lib.isolation.worker import results as w
        if type(self).calls > 1 and w._ARENA and w._ARENA[0] is not None:
            w._ARENA[0].tensor.zero_()
        return out''')


@pytest.fixture
def gpu_only():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


@pytest.mark.gpu
def test_an_arena_is_made_zeroed_and_mapped_by_another_process(gpu_only, tmp_path):
    """Memory made by one process is written by another that maps it from the descriptor alone,
    and its writes are what the first reads (here a child through plain fork + exec)."""
    import subprocess
    import sys

    if not device_arena.supported("cuda"):
        pytest.skip("the driver cannot share memory as a file descriptor")
    arena = device_arena.create("cuda", 8 << 20)
    assert arena is not None and arena.nbytes >= 8 << 20 and int(arena.tensor.sum()) == 0
    code = ("import os, torch; from kbench_lib.measure import device_arena as d; torch.cuda.init(); torch.empty(1, device='cuda');"
            "a = d.attach_from_env('cuda'); assert a is not None;"
            "a.tensor[:1024].fill_(7); torch.cuda.synchronize(); print('mapped', a.nbytes)")
    env = {**os.environ, device_arena.ENV_FD: str(arena.fd), device_arena.ENV_BYTES: str(arena.nbytes)}
    out = subprocess.run([sys.executable, "-c", code], env=env, pass_fds=(arena.fd,), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    arena.close_fd()
    assert int(arena.tensor[:1024].sum()) == 7 * 1024 and int(arena.tensor[1024:].sum()) == 0


@pytest.mark.gpu
def test_outputs_go_through_the_arena_with_the_verdict_of_files(gpu_only, scale_add_relu, fixtures):
    """An honest Triton kernel at full size (64 MB outputs): correct and unflagged with the arena as
    through files; with it, the worker mapped the arena."""
    if not device_arena.supported("cuda"):
        pytest.skip("the driver cannot share memory as a file descriptor")
    triton = load_candidate(fixtures / "candidates" / "scale_add_relu_triton.py")
    on = judge(scale_add_relu, triton, JudgeOptions(device="cuda", timing_budget_s=0.3))
    off = judge(scale_add_relu, triton, JudgeOptions(device="cuda", timing_budget_s=0.3, device_arena=False))
    for v in (on, off):
        assert v.correct and not v.flags, (v.failure, v.message, v.flags)
    assert "device_arena" in on.stage_s and "run_start.arena" in on.stage_s
    assert "device_arena" not in off.stage_s and "run_start.arena" not in off.stage_s


@pytest.mark.gpu
def test_a_candidate_that_changes_the_arena_after_the_writes_is_caught(gpu_only, scale_add_relu):
    """The judge compares the arena as the worker's processes left it, after they all ended: a
    candidate that zeroes it after the harness wrote its outputs there fails."""
    if not device_arena.supported("cuda"):
        pytest.skip("the driver cannot share memory as a file descriptor")
    v = judge(scale_add_relu, Candidate(TAMPERS, "torch"), JudgeOptions(device="cuda", timing_budget_s=0.3))
    assert "run_start.arena" in v.stage_s
    assert not v.correct and v.failure in ("output_mismatch", "crash"), (v.failure, v.message)


@pytest.mark.parametrize("path", ["tests/fixtures/problems/level1/1_Scale_Add_ReLU.py", "problems/robust/12_GELU_MLP_Backward.py"])
def test_the_arena_holds_every_output_an_honest_worker_writes(tmp_path, path):
    """The judge sizes the arena from the reference's outputs (and gradients, for a backward task):
    the worker's result files, written as it writes them, place every tensor in it, none in a file."""
    from pathlib import Path

    from kbench_lib.isolation.worker.timed import timing_file
    from kbench_lib.judging.outputs import _arena_bytes
    from kbench_lib.judging.prepared import prepare
    from kbench_lib.suite.problems import load_problem

    root = Path(__file__).resolve().parent.parent
    opts = JudgeOptions(device="cpu")
    prep = prepare(load_problem(root / path), "cpu", opts, small=True, seed=3)
    arena = _host_arena(_arena_bytes(prep, opts))

    def real(t):  # the plan keeps timed sets' expected outputs as shapes only
        return torch.ones(t.shape, dtype=t.dtype) if isinstance(t, torch.Tensor) else t

    files = []
    for i, (case, timed) in enumerate(zip(prep.cases, prep.timed)):
        if timed:
            continue
        record = {"outputs": list(case.expected), "inputs_after": [{"shape": [1], "dtype": "torch.float32", "sums": [0, 0]}]}
        if prep.problem.task == "backward":
            record["input_grads"] = list(case.expected_input_grads)
            record["param_grads"] = dict(case.expected_param_grads)
        files.append((f"case_{i}.kbt", record))
    for k, (name, timed, _) in enumerate(prep.timing_groups):
        samples = {str(i): [real(t) for t in prep.cases[i].expected] for i in timed}
        files.append((timing_file(timed, name if k else None), {"samples": samples, "inputs_after": {str(i): [] for i in timed}}))
    assert prep.problem.task != "backward" or any(f[1].get("param_grads") for f in files)
    for name, record in files:
        tensorfile.write(str(tmp_path / name), record, arena=arena)
        metas = _header(str(tmp_path / name))["tensors"]
        assert metas and all(m.get("arena") is True for m in metas if m["nbytes"]), name
    assert arena.used <= arena.nbytes


@pytest.mark.parametrize("nbytes", ["4096", "not a number", None])
def test_a_worker_closes_the_arena_descriptor_whatever_it_was_told(monkeypatch, nbytes):
    """Mapped or not (no GPU here, a size that does not parse, none given), the worker takes the
    descriptor and both names out of reach of the candidate it imports next."""
    r, w = os.pipe()
    try:
        monkeypatch.setenv(device_arena.ENV_FD, str(w))
        if nbytes is None:
            monkeypatch.delenv(device_arena.ENV_BYTES, raising=False)
        else:
            monkeypatch.setenv(device_arena.ENV_BYTES, nbytes)
        assert device_arena.attach_from_env("cpu") is None
        assert device_arena.ENV_FD not in os.environ and device_arena.ENV_BYTES not in os.environ
        with pytest.raises(OSError):
            os.fstat(w)
    finally:
        os.close(r)


@pytest.mark.gpu
def test_an_arena_goes_back_to_the_device_after_its_verdict(gpu_only, scale_add_relu, fixtures):
    """Each judgement makes its own arena (64 MB of outputs here) and nothing the judge keeps views
    it: after the verdict its memory is the device's again, judgement after judgement."""
    if not device_arena.supported("cuda"):
        pytest.skip("the driver cannot share memory as a file descriptor")
    import gc

    triton = load_candidate(fixtures / "candidates" / "scale_add_relu_triton.py")
    opts = JudgeOptions(device="cuda", timing=False)

    def free_after_judging() -> int:
        v = judge(scale_add_relu, triton, opts)
        assert v.correct and "device_arena" in v.stage_s, (v.failure, v.message)
        del v
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # the caching allocator's blocks are not the arena's
        return torch.cuda.mem_get_info()[0]

    first = free_after_judging()  # the judge's own context and caches are made by now
    later = [free_after_judging() for _ in range(3)]
    # one arena kept alive would cost its whole size (over 64 MB); allow driver noise below that
    assert min(later) > first - (32 << 20), (first, later)
