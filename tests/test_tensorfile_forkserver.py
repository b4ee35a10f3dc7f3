"""The raw tensor files outputs travel in, and the warm fork server workers start from."""
import os
import shutil
import struct
import tempfile

import pytest
import torch

from kbench_lib.isolation import sandbox, server_pool
from kbench_lib.measure import tensorfile


def test_tensor_file_round_trip(tmp_path):
    tree = {"outputs": [torch.randn(3, 5), torch.arange(7, dtype=torch.int64)[::2], torch.tensor([True, False]),
                        torch.randn(4, dtype=torch.complex64), torch.randn(2, 2).bfloat16(), torch.empty(0, 3)],
            "inputs_after": [{"shape": [3], "dtype": "torch.float32", "sums": [1, 2]}, None, 3.5]}
    path = str(tmp_path / "x.kbt")
    tensorfile.write(path, tree)
    got = tensorfile.read(path)
    for a, b in zip(tree["outputs"], got["outputs"]):
        assert type(b) is torch.Tensor and b.dtype == a.dtype and b.shape == a.shape and torch.equal(a, b)
    assert got["inputs_after"] == tree["inputs_after"]


def test_preallocated_file_is_filled_and_never_clobbers_a_writer(tmp_path):
    path = str(tmp_path / "x.kbt")
    assert tensorfile.preallocate(path, 8 << 20) and os.path.getsize(path) == 8 << 20
    tree = {"outputs": [torch.randn(100, 7)]}
    tensorfile.write(path, tree)  # fills the allocated pages, sized to what it wrote
    assert os.path.getsize(path) < 8 << 20 and torch.equal(tensorfile.read(path)["outputs"][0], tree["outputs"][0])
    written = open(path, "rb").read()
    assert not tensorfile.preallocate(path, 16 << 20)  # the writer came first: nothing is touched
    assert open(path, "rb").read() == written


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["shm", "disk"])
def test_device_tensors_are_written_page_locked_and_read_to_the_gpu(tmp_path, where):
    """Large CUDA tensors are copied by DMA into the registered pages of a RAM-backed file (where the
    judge's job folders are) and arrive bit-identical on the reader's GPU, small ones and CPU ones
    beside them too. Where registration is refused (a file on disk may be), the copy is pageable and
    CUDA stays healthy: the next CUDA call must not inherit an error."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if where == "shm" and not os.access("/dev/shm", os.W_OK):
        pytest.skip("no /dev/shm")
    folder = tempfile.mkdtemp(dir="/dev/shm") if where == "shm" else str(tmp_path)
    try:
        big = torch.randn(4096, 4096, device="cuda")  # 64 MB
        small = torch.arange(10, device="cuda")
        path = os.path.join(folder, "x.kbt")
        before = tensorfile.PINNED["write"]
        tensorfile.write(path, {"outputs": [big, small, torch.ones(3)]})
        if where == "shm":
            assert tensorfile.PINNED["write"] == before + 1
        assert torch.equal(big * 2, big + big)  # CUDA is healthy whatever registration did
        got = tensorfile.read(path, device="cuda")
        if where == "shm":
            assert tensorfile.PINNED["read"] >= 1
        assert all(t.is_cuda for t in got["outputs"])
        assert torch.equal(got["outputs"][0], big) and torch.equal(got["outputs"][1], small)
        assert torch.equal(got["outputs"][2].cpu(), torch.ones(3))
        cpu_view = tensorfile.read(path)["outputs"][0]
        assert not cpu_view.is_cuda and torch.equal(cpu_view, big.cpu())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("damage", ["magic", "header_length", "nbytes", "dtype", "truncate"])
def test_a_forged_tensor_file_is_an_error_not_a_result(tmp_path, damage):
    path = str(tmp_path / "x.kbt")
    tensorfile.write(path, {"outputs": [torch.ones(1000)]})
    raw = bytearray(open(path, "rb").read())
    (hlen,) = struct.unpack("<Q", raw[4:12])
    header = raw[12:12 + hlen].decode()
    if damage == "magic":
        raw[:4] = b"XXXX"
    elif damage == "header_length":
        raw[4:12] = struct.pack("<Q", 1 << 40)
    elif damage == "nbytes":
        raw[12:12 + hlen] = header.replace('"nbytes": 4000', '"nbytes": 9000').encode()
    elif damage == "dtype":
        raw[12:12 + hlen] = header.replace('"torch.float32"', '"torch.float64"').encode()
    else:
        raw = raw[:200]
    open(path, "wb").write(bytes(raw))
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.read(path)


def _worker_job(tmp_path, code: str) -> str:
    """A worker run whose 'candidate' is only a job.json the worker cannot parse: used to reach
    the forked child; the tests below check the process handling, not the judge."""
    d = tmp_path / "job"
    d.mkdir()
    (d / "job.json").write_text(code)
    return str(d)


def test_forked_worker_reports_its_exit_status_and_output(tmp_path):
    wd = _worker_job(tmp_path, "not json")
    res = sandbox.run_isolated(["-m", "kbench_lib.isolation.worker", "run", wd], workdir=wd, timeout_s=120)
    assert not res.timed_out and res.returncode == 1  # the worker's own harness error
    assert any(m.get("event") == "harness_error" for m in res.messages)
    assert "JSONDecodeError" in res.log
    server = server_pool.server(False)
    assert server is not None and server.alive()


def test_forked_worker_is_killed_at_its_time_limit(tmp_path, monkeypatch):
    wd = _worker_job(tmp_path, "{}")
    fifo = os.path.join(wd, "job.json")
    os.unlink(fifo)
    os.mkfifo(fifo)  # the worker blocks opening it: a hang before any candidate code
    res = sandbox.run_isolated(["-m", "kbench_lib.isolation.worker", "run", wd], workdir=wd, timeout_s=3)
    assert res.timed_out and res.wall_s < 60
    (tmp_path / "b").mkdir()
    wd2 = _worker_job(tmp_path / "b", "not json")
    again = sandbox.run_isolated(["-m", "kbench_lib.isolation.worker", "run", wd2], workdir=wd2, timeout_s=120)
    assert not again.timed_out and again.returncode == 1  # the server still serves the next one


def _forge(path, metas, tree, data: bytes) -> None:
    """A tensor file with a hand-made header (what a candidate's process can write)."""
    import json

    header = json.dumps({"tree": tree, "tensors": metas}).encode()
    start = (4 + 8 + len(header) + 63) // 64 * 64
    raw = b"KBT1" + struct.pack("<Q", len(header)) + header
    open(path, "wb").write(raw + b"\0" * (start - len(raw)) + data)


def test_a_header_aliasing_one_region_many_times_is_refused(tmp_path):
    """20,000 entries over one 1 MB region: a 1 MB file that a device copy would make 20 GB of."""
    path = str(tmp_path / "x.kbt")
    n = 20000
    metas = [{"dtype": "torch.float32", "shape": [1 << 18], "offset": 0, "nbytes": 1 << 20}] * n
    _forge(path, metas, {"outputs": [{"__tensor__": i} for i in range(n)]}, b"\0" * (1 << 20))
    with pytest.raises(tensorfile.TensorFileError, match="overlap"):
        tensorfile.read(path)
    # partial overlap too; adjacent and empty tensors are fine
    metas = [{"dtype": "torch.float32", "shape": [4], "offset": 0, "nbytes": 16},
             {"dtype": "torch.float32", "shape": [4], "offset": 8, "nbytes": 16}]
    _forge(path, metas, [{"__tensor__": 0}, {"__tensor__": 1}], b"\0" * 64)
    with pytest.raises(tensorfile.TensorFileError, match="overlap"):
        tensorfile.read(path)
    metas = [{"dtype": "torch.float32", "shape": [4], "offset": 0, "nbytes": 16},
             {"dtype": "torch.float32", "shape": [0], "offset": 0, "nbytes": 0},
             {"dtype": "torch.float32", "shape": [4], "offset": 16, "nbytes": 16}]
    _forge(path, metas, [{"__tensor__": i} for i in range(3)], b"\0" * 64)
    assert [t.numel() for t in tensorfile.read(path)] == [4, 0, 4]


@pytest.mark.parametrize("damage", ["infinite_dim", "deep_tree"])
def test_odd_headers_are_errors_not_exceptions(tmp_path, damage):
    path = str(tmp_path / "x.kbt")
    if damage == "infinite_dim":
        header = b'{"tree": [{"__tensor__": 0}], "tensors": [{"dtype": "torch.float32", "shape": [Infinity], "offset": 0, "nbytes": 4}]}'
        raw = b"KBT1" + struct.pack("<Q", len(header)) + header
        open(path, "wb").write(raw + b"\0" * 256)
    elif damage == "deep_tree":
        header = b'{"tree": ' + b"[" * 100000 + b"]" * 100000 + b', "tensors": []}'
        open(path, "wb").write(b"KBT1" + struct.pack("<Q", len(header)) + header)
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.read(path)


def test_a_file_larger_than_its_cap_is_refused_before_any_device_copy(tmp_path, monkeypatch):
    """A forged result file larger than an honest one is refused before the judge's GPU sees it; a
    device copy that fails all the same is the judge's own trouble (a full GPU, a broken context):
    it is not turned into a verdict on the candidate's file."""
    path = str(tmp_path / "x.kbt")
    tensorfile.write(path, {"outputs": [torch.ones(1000)]})
    copies = []

    def no_memory(self, *a, **k):
        copies.append(1)
        raise torch.OutOfMemoryError("CUDA out of memory (a test)")

    monkeypatch.setattr(torch.Tensor, "to", no_memory)
    with pytest.raises(tensorfile.TensorFileError, match="more than the 3999"):
        tensorfile.read(path, device="cuda", max_bytes=3999)
    assert not copies
    with pytest.raises(torch.OutOfMemoryError):
        tensorfile.read(path, device="cuda", max_bytes=4000)
    assert copies


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_only_a_regular_file_is_read(tmp_path, kind):
    """A FIFO planted at a result path would block the judge's open forever; a symlink could point
    anywhere: both are errors, at once."""
    real = str(tmp_path / "real.kbt")
    tensorfile.write(real, {"outputs": [torch.ones(3)]})
    path = str(tmp_path / "x.kbt")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink(real, path)
    else:
        os.mkdir(path)
    with pytest.raises(tensorfile.TensorFileError):
        tensorfile.read(path)
    fd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(tensorfile.TensorFileError):
            tensorfile.read("x.kbt", dir_fd=fd)
        assert torch.equal(tensorfile.read("real.kbt", dir_fd=fd)["outputs"][0], torch.ones(3))
        if kind != "folder":
            assert not tensorfile.preallocate("x.kbt", 1 << 20, dir_fd=fd)  # never through a symlink or into a FIFO
    finally:
        os.close(fd)
    if kind == "symlink":
        assert os.path.getsize(real) < 1 << 20


def test_the_servers_warm_keys_are_memoised_before_a_fork_and_start_nothing():
    """Triton's source hash, computed once in the server, is what a forked child finds: its first
    Triton launch does not hash libtriton.so again. No call initialises CUDA or leaves a thread
    (the server forks with neither)."""
    import threading

    from kbench_lib.isolation import forkserver

    pytest.importorskip("triton")
    from triton.runtime.cache import triton_key

    threads = threading.active_count()
    done = forkserver.warm_keys()
    assert "triton.runtime.cache.triton_key" in done
    assert threading.active_count() == threads and not torch.cuda.is_initialized()
    pid = os.fork()
    if pid == 0:  # the child: the memoised value is there, nothing is hashed again
        os._exit(0 if triton_key.cache_info().currsize == 1 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_the_servers_warm_keys_fix_no_folder_of_the_servers_own():
    """Inductor's codecache, once imported, keeps folders under the importing process's temporary
    folder in module constants: imported in the server, a worker's torch.compile wrote there (the
    server's /tmp, read-only in the worker) and failed. The warm keys leave it unimported."""
    import subprocess
    import sys

    code = ("import sys; from kbench_lib.isolation import forkserver; forkserver.warm_keys(); "
            "print(sorted(m for m in sys.modules if m.startswith('torch._inductor.codecache')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
