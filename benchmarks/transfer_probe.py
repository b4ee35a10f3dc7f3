"""How fast do outputs move between a GPU and a RAM-backed file, and by which path? Times the
tensor file's own write and read, and their parts (page allocation, cudaHostRegister, DMA copy),
against a page-locked staging buffer. Not a test: prints one JSON line per measurement.

    python benchmarks/transfer_probe.py --mb 1280
"""
from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kbench_lib import tensorfile  # noqa: E402


def _t(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1280)
    ap.add_argument("--dir", default="/dev/shm")
    a = ap.parse_args()
    n = a.mb << 20
    x = torch.randn(n // 4, device="cuda")
    d = tempfile.mkdtemp(dir=a.dir)
    cud = torch.cuda.cudart()

    def emit(**kw):
        print(json.dumps({"mb": a.mb, **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in kw.items()}}), flush=True)

    # the tensor file as the judge uses it
    for i in range(2):
        p = os.path.join(d, f"tf{i}.kbt")
        before = dict(tensorfile.PINNED)
        s, _ = _t(lambda: tensorfile.write(p, {"o": [x]}))
        emit(what="tensorfile.write", s=s, gb_s=n / s / 1e9, pinned=tensorfile.PINNED["write"] - before["write"])
        s, got = _t(lambda: tensorfile.read(p, device="cuda"))
        emit(what="tensorfile.read(cuda)", s=s, gb_s=n / s / 1e9,
             equal=bool(torch.equal(got["o"][0], x)))
        del got
        os.unlink(p)

    # the parts, on a fresh tmpfs file
    for populate in (False, True):
        p = os.path.join(d, "raw")
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(fd, n)
        flags = mmap.MAP_SHARED | (mmap.MAP_POPULATE if populate else 0)
        t0 = time.perf_counter()
        mm = mmap.mmap(fd, n, flags=flags)
        map_s = time.perf_counter() - t0
        os.close(fd)
        ptr = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        t0 = time.perf_counter()
        rc = int(cud.cudaHostRegister(ptr, n, 0))
        reg_s = time.perf_counter() - t0
        dst = torch.frombuffer(mm, dtype=torch.uint8, count=n)
        s, _ = _t(lambda: dst.copy_(x.view(torch.uint8)))
        s2, _ = _t(lambda: dst.copy_(x.view(torch.uint8)))
        t0 = time.perf_counter()
        if rc == 0:
            cud.cudaHostUnregister(ptr)
        unreg_s = time.perf_counter() - t0
        emit(what="raw write", populate=populate, map_s=map_s, register_rc=rc, register_s=reg_s, copy_s=s, copy_again_s=s2,
             unregister_s=unreg_s)
        # read side: a read-only mapping registered read-only, and a read-write mapping
        for ro in (True, False):
            fd = os.open(p, os.O_RDONLY if ro else os.O_RDWR)
            mr = mmap.mmap(fd, n, prot=mmap.PROT_READ if ro else mmap.PROT_READ | mmap.PROT_WRITE)
            os.close(fd)
            src = torch.frombuffer(mr, dtype=torch.uint8, count=n)
            rptr = src.data_ptr()
            t0 = time.perf_counter()
            rrc = int(cud.cudaHostRegister(rptr, n, 8 if ro else 0))
            rreg_s = time.perf_counter() - t0
            if rrc:
                cud.cudaGetLastError()
            s, y = _t(lambda: src.to("cuda"))
            if rrc == 0:
                cud.cudaHostUnregister(rptr)
            emit(what="raw read", populate=populate, read_only=ro, register_rc=rrc, register_s=rreg_s, copy_s=s,
                 equal=bool(torch.equal(y.view(torch.float32), x)))
            del src, y
            mr.close()
        del dst
        mm.close()
        os.unlink(p)

    # a page-locked staging buffer, then a host copy into the file
    t0 = time.perf_counter()
    stage = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    alloc_s = time.perf_counter() - t0
    s, _ = _t(lambda: stage.copy_(x.view(torch.uint8)))
    p = os.path.join(d, "staged")
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.ftruncate(fd, n)
    mm = mmap.mmap(fd, n)
    os.close(fd)
    dst = torch.frombuffer(mm, dtype=torch.uint8, count=n)
    t0 = time.perf_counter()
    dst.copy_(stage)
    host_s = time.perf_counter() - t0
    emit(what="staged write", pinned_alloc_s=alloc_s, d2h_pinned_s=s, d2h_gb_s=n / s / 1e9, host_copy_s=host_s)
    del dst
    mm.close()
    os.unlink(p)
    os.rmdir(d)


if __name__ == "__main__":
    main()
