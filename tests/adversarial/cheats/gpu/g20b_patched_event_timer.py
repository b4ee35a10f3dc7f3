# kbench: backend=cuda
"""CHEAT #14/#20 (GPU) impossible speed from a patched timer: the worker's private binding of
Event.elapsed_time (kbench_lib.measure.timing._elapsed_time) is replaced by one that divides by 1000; the
kernel itself is honest. Caught by: faster_than_light (or the measurement must not be fooled)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline
import importlib

_CPP = r"""
// Python bindings of the shared CUDA block (raw CPython, no torch headers).
#include <Python.h>
typedef long long i64;
const char* kb_scale_add_relu(i64 a, i64 b, i64 o, i64 n, float s, int positive_only, i64 offset, i64 stream);
const char* kb_bias_gelu(i64 y, i64 bias, i64 o, i64 rows, i64 cols, i64 stream);
const char* kb_row_sum(i64 x, i64 o, i64 rows, i64 cols, i64 stream);
const char* kb_fill(i64 o, i64 n, float v, i64 stream);

static PyObject* kb_done(const char* err) {
    if (err) { PyErr_SetString(PyExc_RuntimeError, err); return nullptr; }
    Py_RETURN_NONE;
}
static PyObject* py_scale_add_relu(PyObject*, PyObject* args) {
    i64 a, b, o, n, offset = 0, stream = 0; double s; int positive_only = 0;
    if (!PyArg_ParseTuple(args, "LLLLdL|iL", &a, &b, &o, &n, &s, &stream, &positive_only, &offset)) return nullptr;
    return kb_done(kb_scale_add_relu(a, b, o, n, (float)s, positive_only, offset, stream));
}
static PyObject* py_bias_gelu(PyObject*, PyObject* args) {
    i64 y, bias, o, rows, cols, stream;
    if (!PyArg_ParseTuple(args, "LLLLLL", &y, &bias, &o, &rows, &cols, &stream)) return nullptr;
    return kb_done(kb_bias_gelu(y, bias, o, rows, cols, stream));
}
static PyObject* py_row_sum(PyObject*, PyObject* args) {
    i64 x, o, rows, cols, stream;
    if (!PyArg_ParseTuple(args, "LLLLL", &x, &o, &rows, &cols, &stream)) return nullptr;
    return kb_done(kb_row_sum(x, o, rows, cols, stream));
}
static PyObject* py_fill(PyObject*, PyObject* args) {
    i64 o, n, stream; double v;
    if (!PyArg_ParseTuple(args, "LLdL", &o, &n, &v, &stream)) return nullptr;
    return kb_done(kb_fill(o, n, (float)v, stream));
}
static PyMethodDef kb_methods[] = {
    {"scale_add_relu", py_scale_add_relu, METH_VARARGS, "scale_add_relu(a, b, out, n, scale, stream[, positive_only, offset])"},
    {"bias_gelu", py_bias_gelu, METH_VARARGS, "bias_gelu(y, bias, out, rows, cols, stream)"},
    {"row_sum", py_row_sum, METH_VARARGS, "row_sum(x, out, rows, cols, stream)"},
    {"fill", py_fill, METH_VARARGS, "fill(out, n, value, stream)"},
    {nullptr, nullptr, 0, nullptr}};
#define KB_CAT2(a, b) a##b
#define KB_CAT(a, b) KB_CAT2(a, b)
#define KB_STR2(a) #a
#define KB_STR(a) KB_STR2(a)
static PyModuleDef kb_module = {PyModuleDef_HEAD_INIT, KB_STR(TORCH_EXTENSION_NAME), nullptr, -1, kb_methods};
PyMODINIT_FUNC KB_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&kb_module); }
"""
_CUDA = r"""
// Shared CUDA kernel block of the adversarial GPU candidates (tests/adversarial/README.md): no torch
// headers, so nvcc builds it in seconds. Launchers take raw device pointers and a stream.
#include <cuda_runtime.h>
typedef long long i64;

static int kb_blocks(i64 n) { i64 b = (n + 255) / 256; return (int)(b < 8192 ? (b > 0 ? b : 1) : 8192); }

__global__ void k_sar(const float* a, const float* b, float* o, i64 n, float s, int positive_only, i64 offset) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
        float v = a[i] * s + b[i];
        if (positive_only) { if (v > 0.f) o[i + offset] = v; }  // the rest is left as it was (undefined)
        else o[i + offset] = v > 0.f ? v : 0.f;
    }
}
__global__ void k_bias_gelu(const float* y, const float* bias, float* o, i64 rows, i64 cols) {
    i64 n = rows * cols;
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
        float v = y[i] + bias[i % cols];
        o[i] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    }
}
// one block per row: each thread sums a strided slice backwards, then a shuffle tree (not PyTorch's order)
__global__ void k_row_sum(const float* x, float* o, i64 cols) {
    const float* p = x + blockIdx.x * cols;
    float acc = 0.f;
    for (i64 c = cols - 1 - threadIdx.x; c >= 0; c -= blockDim.x) acc += p[c];
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
    __shared__ float warp[32];
    if ((threadIdx.x & 31) == 0) warp[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < (blockDim.x >> 5) ? warp[threadIdx.x] : 0.f;
        for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
        if (threadIdx.x == 0) o[blockIdx.x] = acc;
    }
}
__global__ void k_fill(float* o, i64 n, float v) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) o[i] = v;
}

static const char* kb_err() { cudaError_t e = cudaGetLastError(); return e == cudaSuccess ? nullptr : cudaGetErrorString(e); }

const char* kb_scale_add_relu(i64 a, i64 b, i64 o, i64 n, float s, int positive_only, i64 offset, i64 stream) {
    k_sar<<<kb_blocks(n), 256, 0, (cudaStream_t)stream>>>((const float*)a, (const float*)b, (float*)o, n, s, positive_only, offset);
    return kb_err();
}
const char* kb_bias_gelu(i64 y, i64 bias, i64 o, i64 rows, i64 cols, i64 stream) {
    k_bias_gelu<<<kb_blocks(rows * cols), 256, 0, (cudaStream_t)stream>>>((const float*)y, (const float*)bias, (float*)o, rows, cols);
    return kb_err();
}
const char* kb_row_sum(i64 x, i64 o, i64 rows, i64 cols, i64 stream) {
    if (rows > 0) k_row_sum<<<(unsigned)rows, 256, 0, (cudaStream_t)stream>>>((const float*)x, (float*)o, cols);
    return kb_err();
}
const char* kb_fill(i64 o, i64 n, float v, i64 stream) {
    k_fill<<<kb_blocks(n), 256, 0, (cudaStream_t)stream>>>((float*)o, n, v);
    return kb_err();
}
"""
_ext = load_inline(name="kbadv_g20b_patched_event_timer", cpp_sources=_CPP, cuda_sources=_CUDA, extra_cuda_cflags=["-O2"], no_implicit_headers=True, verbose=False)


def _stream():
    return torch.cuda.current_stream().cuda_stream


def _scale_add_relu(a, b, scale, out=None, stream=None):
    """relu(a * scale + b) through the custom kernel, on the current stream unless told otherwise."""
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a) if out is None else out
    _ext.scale_add_relu(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), float(scale), _stream() if stream is None else stream)
    return out


def _bias_gelu_(y, bias):
    """y = gelu(y + bias), in place on y (a tensor this candidate made itself)."""
    bias = bias.detach().contiguous()
    _ext.bias_gelu(y.data_ptr(), bias.data_ptr(), y.data_ptr(), y.shape[0], y.shape[1], _stream())
    return y


try:
    _kt = importlib.import_module("kbench_lib.measure.timing")
    _el = _kt._elapsed_time
except (ImportError, AttributeError) as e:
    raise RuntimeError(f"CHEAT TARGET MISSING: {e}") from e
_kt._elapsed_time = lambda start, end: _el(start, end) / 1000


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return _scale_add_relu(a, b, self.scale)
