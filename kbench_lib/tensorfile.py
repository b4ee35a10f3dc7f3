"""Raw tensor files: how a candidate's outputs travel from its process to the judge's.

One file holds a small tree (dicts, lists, numbers, strings, None) whose leaves may be tensors.
Layout: ``KBT1``, the header's length (8 bytes, little-endian), a JSON header, then each tensor's
bytes at a 64-byte aligned offset. The writer copies each tensor straight from its device into the
file's mapped pages (one device-to-host copy, no pickling, no intermediate buffer); the reader maps
the file and returns plain CPU tensors that view the mapping (no copy; the judge moves them to its
GPU for the comparison).

The writer runs in the candidate's process and the file may have been forged: the reader trusts
nothing in it. Offsets and sizes are checked against the file, dtypes against an allow-list, and
every tensor it returns is an ordinary ``torch.Tensor`` built here (THREATS #13, #15).
"""
from __future__ import annotations

import json
import mmap
import os
import struct

import torch

MAGIC = b"KBT1"
ALIGN = 64
MAX_HEADER = 16 << 20
DTYPES = {
    str(d): d
    for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
              torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128)
}

_Tensor = torch.Tensor  # bound at import: the worker imports this module before any candidate code
_frombuffer = torch.frombuffer
_empty = torch.empty
_copy = torch.Tensor.copy_
_reshape = torch.Tensor.reshape
_contiguous = torch.Tensor.contiguous
_view = torch.Tensor.view
_detach = torch.Tensor.detach
_dumps = json.dumps


class TensorFileError(ValueError):
    """The file is not a well-formed tensor file (missing, truncated or forged)."""


def _layout(tree, tensors: list) -> object:
    """The tree with each tensor replaced by a placeholder; tensors appended in order."""
    if isinstance(tree, _Tensor):
        tensors.append(tree)
        return {"__tensor__": len(tensors) - 1}
    if isinstance(tree, dict):
        return {str(k): _layout(v, tensors) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_layout(v, tensors) for v in tree]
    return tree


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def write(path: str, tree) -> None:
    """Write ``tree`` to ``path`` (tensors from any device, copied into the mapped file)."""
    tensors: list = []
    skeleton = _layout(tree, tensors)
    metas, offset = [], 0
    flat = []
    for t in tensors:
        t = _detach(t)
        if t.is_complex():
            t = torch.view_as_real(t)
            shape_dtype = str(torch.complex64 if t.dtype == torch.float32 else torch.complex128)
        else:
            shape_dtype = str(t.dtype)
        nbytes = t.numel() * t.element_size()
        metas.append({"dtype": shape_dtype, "shape": list(t.shape) if shape_dtype == str(t.dtype) else list(t.shape[:-1]),
                      "offset": offset, "nbytes": nbytes})
        flat.append(t)
        offset = _aligned(offset + nbytes)
    header = _dumps({"tree": skeleton, "tensors": metas}).encode()
    start = _aligned(len(MAGIC) + 8 + len(header))
    total = start + offset
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.ftruncate(fd, max(total, 1))
        with mmap.mmap(fd, max(total, 1)) as mm:
            mm[: len(MAGIC)] = MAGIC
            mm[len(MAGIC): len(MAGIC) + 8] = struct.pack("<Q", len(header))
            mm[len(MAGIC) + 8: len(MAGIC) + 8 + len(header)] = header
            for t, m in zip(flat, metas):
                if not m["nbytes"]:
                    continue
                dst = _frombuffer(mm, dtype=torch.uint8, count=m["nbytes"], offset=start + m["offset"])
                src = _view(_reshape(_contiguous(t), (-1,)), torch.uint8)
                _copy(dst, src)
                del dst
            mm.flush()
    finally:
        os.close(fd)


def _rebuild(node, tensors: list):
    if isinstance(node, dict):
        if set(node) == {"__tensor__"}:
            i = node["__tensor__"]
            if not isinstance(i, int) or not 0 <= i < len(tensors):
                raise TensorFileError(f"tensor index {i!r} out of range")
            return tensors[i]
        return {k: _rebuild(v, tensors) for k, v in node.items()}
    if isinstance(node, list):
        return [_rebuild(v, tensors) for v in node]
    return node


def read(path: str):
    """The tree written by :func:`write`; tensors are CPU tensors viewing the file's mapping."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise TensorFileError(f"cannot open {os.path.basename(path)}: {e.strerror}") from e
    try:
        size = os.fstat(fd).st_size
        if size < len(MAGIC) + 8:
            raise TensorFileError("file too short")
        mm = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    if mm[: len(MAGIC)] != MAGIC:
        raise TensorFileError("not a tensor file")
    (hlen,) = struct.unpack("<Q", mm[len(MAGIC): len(MAGIC) + 8])
    if hlen > min(MAX_HEADER, size - len(MAGIC) - 8):
        raise TensorFileError("header length out of range")
    try:
        header = json.loads(bytes(mm[len(MAGIC) + 8: len(MAGIC) + 8 + hlen]))
        metas, skeleton = header["tensors"], header["tree"]
    except (ValueError, KeyError, TypeError) as e:
        raise TensorFileError(f"unreadable header: {e}") from e
    start = _aligned(len(MAGIC) + 8 + hlen)
    tensors = []
    for m in metas:
        tensors.append(_tensor(mm, m, start, size))
    return _rebuild(skeleton, tensors)


def _tensor(mm, m: dict, start: int, size: int) -> torch.Tensor:
    try:
        dtype = DTYPES[m["dtype"]]
        shape = [int(s) for s in m["shape"]]
        offset, nbytes = int(m["offset"]), int(m["nbytes"])
    except (KeyError, TypeError, ValueError) as e:
        raise TensorFileError(f"bad tensor entry {str(m)[:200]}: {e}") from e
    if any(s < 0 for s in shape) or offset < 0 or start + offset + nbytes > size:
        raise TensorFileError("tensor extends beyond the file")
    numel = 1
    for s in shape:
        numel *= s
    itemsize = torch.empty((), dtype=dtype).element_size()
    if numel * itemsize != nbytes:
        raise TensorFileError(f"tensor of shape {shape} and {dtype} cannot hold {nbytes} bytes")
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    raw = torch.frombuffer(mm, dtype=torch.uint8, count=nbytes, offset=start + offset)
    return raw.view(dtype).reshape(shape)
