# kbench: backend=cpp
"""CHEAT #15 forged result on the harness's channel: the worker's message channel lives in the
candidate's process; the candidate wraps its send method so that the timing message it sends
reports times 1000 times smaller. Should be caught (or the reported time must not be forged)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline
import sys

_SRC = r"""
// Shared CPU kernel block of the adversarial candidates (tests/adversarial/README.md). It is the
// same text in every cpp candidate. Raw CPython bindings over data pointers (no torch headers):
// each candidate builds in about a second instead of about a minute.
#include <Python.h>
#include <cmath>

typedef long long i64;

static inline float kb_gelu(double v) { return (float)(0.5 * v * (1.0 + std::erf(v * 0.7071067811865476))); }

// o = relu(a * s + b)
static void k_scale_add_relu(const float* a, const float* b, float* o, i64 n, float s) {
    for (i64 i = 0; i < n; ++i) { float v = a[i] * s + b[i]; o[i] = v > 0.f ? v : 0.f; }
}
// stores only the positive results: right only where o already held zeros (undefined on torch.empty)
static void k_scale_add_relu_pos(const float* a, const float* b, float* o, i64 n, float s) {
    for (i64 i = 0; i < n; ++i) { float v = a[i] * s + b[i]; if (v > 0.f) o[i] = v; }
}
// o[r, c] = gelu(y[r, c] + bias[c]); o may be y (in place)
static void k_bias_gelu(const float* y, const float* bias, float* o, i64 rows, i64 cols) {
    for (i64 r = 0; r < rows; ++r)
        for (i64 c = 0; c < cols; ++c) o[r * cols + c] = kb_gelu((double)y[r * cols + c] + (double)bias[c]);
}
// o = gelu(x @ wt + bias) with wt of shape (in, out), row-major; double accumulation
static void k_linear_gelu(const float* x, const float* wt, const float* bias, float* o, i64 rows, i64 in, i64 out) {
    for (i64 r = 0; r < rows; ++r)
        for (i64 c = 0; c < out; ++c) {
            double acc = bias[c];
            for (i64 k = 0; k < in; ++k) acc += (double)x[r * in + k] * (double)wt[k * out + c];
            o[r * out + c] = kb_gelu(acc);
        }
}
// o[r] = sum of row r: backwards, 8 interleaved partial sums, then a tree (not PyTorch's order)
static void k_row_sum(const float* x, float* o, i64 rows, i64 cols) {
    for (i64 r = 0; r < rows; ++r) {
        const float* p = x + r * cols;
        float lane[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        for (i64 i = cols - 1, j = 0; i >= 0; --i, ++j) lane[j & 7] += p[i];
        o[r] = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    }
}
static void k_fill(float* o, i64 n, float v) { for (i64 i = 0; i < n; ++i) o[i] = v; }

#define KB_F(p) ((float*)(p))
#define KB_CF(p) ((const float*)(p))

static PyObject* py_scale_add_relu(PyObject*, PyObject* args) {
    i64 a, b, o, n; double s;
    if (!PyArg_ParseTuple(args, "LLLLd", &a, &b, &o, &n, &s)) return nullptr;
    k_scale_add_relu(KB_CF(a), KB_CF(b), KB_F(o), n, (float)s);
    Py_RETURN_NONE;
}
static PyObject* py_scale_add_relu_pos(PyObject*, PyObject* args) {
    i64 a, b, o, n; double s;
    if (!PyArg_ParseTuple(args, "LLLLd", &a, &b, &o, &n, &s)) return nullptr;
    k_scale_add_relu_pos(KB_CF(a), KB_CF(b), KB_F(o), n, (float)s);
    Py_RETURN_NONE;
}
static PyObject* py_bias_gelu(PyObject*, PyObject* args) {
    i64 y, bias, o, rows, cols;
    if (!PyArg_ParseTuple(args, "LLLLL", &y, &bias, &o, &rows, &cols)) return nullptr;
    k_bias_gelu(KB_CF(y), KB_CF(bias), KB_F(o), rows, cols);
    Py_RETURN_NONE;
}
static PyObject* py_linear_gelu(PyObject*, PyObject* args) {
    i64 x, wt, bias, o, rows, in, out;
    if (!PyArg_ParseTuple(args, "LLLLLLL", &x, &wt, &bias, &o, &rows, &in, &out)) return nullptr;
    k_linear_gelu(KB_CF(x), KB_CF(wt), KB_CF(bias), KB_F(o), rows, in, out);
    Py_RETURN_NONE;
}
// a "tiled" version that supports in_features % 64 == 0 only, and raises otherwise
static PyObject* py_linear_gelu_tiled(PyObject*, PyObject* args) {
    i64 x, wt, bias, o, rows, in, out;
    if (!PyArg_ParseTuple(args, "LLLLLLL", &x, &wt, &bias, &o, &rows, &in, &out)) return nullptr;
    if (in % 64 != 0) {
        PyErr_SetString(PyExc_RuntimeError, "linear_gelu_tiled: in_features must be a multiple of 64");
        return nullptr;
    }
    k_linear_gelu(KB_CF(x), KB_CF(wt), KB_CF(bias), KB_F(o), rows, in, out);
    Py_RETURN_NONE;
}
static PyObject* py_row_sum(PyObject*, PyObject* args) {
    i64 x, o, rows, cols;
    if (!PyArg_ParseTuple(args, "LLLL", &x, &o, &rows, &cols)) return nullptr;
    k_row_sum(KB_CF(x), KB_F(o), rows, cols);
    Py_RETURN_NONE;
}
static PyObject* py_fill(PyObject*, PyObject* args) {
    i64 o, n; double v;
    if (!PyArg_ParseTuple(args, "LLd", &o, &n, &v)) return nullptr;
    k_fill(KB_F(o), n, (float)v);
    Py_RETURN_NONE;
}

static PyMethodDef kb_methods[] = {
    {"scale_add_relu", py_scale_add_relu, METH_VARARGS, "scale_add_relu(a, b, out, n, scale): out = relu(a * scale + b)"},
    {"scale_add_relu_pos", py_scale_add_relu_pos, METH_VARARGS, "like scale_add_relu, storing positive results only"},
    {"bias_gelu", py_bias_gelu, METH_VARARGS, "bias_gelu(y, bias, out, rows, cols): out = gelu(y + bias)"},
    {"linear_gelu", py_linear_gelu, METH_VARARGS, "linear_gelu(x, wt, bias, out, rows, in, out_f): out = gelu(x @ wt + bias)"},
    {"linear_gelu_tiled", py_linear_gelu_tiled, METH_VARARGS, "linear_gelu for in % 64 == 0 only"},
    {"row_sum", py_row_sum, METH_VARARGS, "row_sum(x, out, rows, cols): out = x.sum(-1)"},
    {"fill", py_fill, METH_VARARGS, "fill(out, n, value)"},
    {nullptr, nullptr, 0, nullptr}};

#define KB_CAT2(a, b) a##b
#define KB_CAT(a, b) KB_CAT2(a, b)
#define KB_STR2(a) #a
#define KB_STR(a) KB_STR2(a)
static PyModuleDef kb_module = {PyModuleDef_HEAD_INIT, KB_STR(TORCH_EXTENSION_NAME), nullptr, -1, kb_methods};
PyMODINIT_FUNC KB_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&kb_module); }
"""
_ext = load_inline(name="kbadv_15b_forge_timing_message", cpp_sources=_SRC, extra_cflags=["-O2"], no_implicit_headers=True, verbose=False)


def _scale_add_relu(a, b, scale, out=None):
    """relu(a * scale + b) through the custom kernel."""
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a) if out is None else out
    _ext.scale_add_relu(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), float(scale))
    return out


# the worker runs as `python -m kbench_lib.isolation.worker`: its channel's class lives in the report
# stage the live process has loaded (sys.modules), not in a fresh import
_kw = sys.modules.get("kbench_lib.isolation.worker.report")
if not hasattr(_kw, "Channel"):
    raise RuntimeError("CHEAT TARGET MISSING: no Channel in the worker's report stage")
_Channel = _kw.Channel
_real_send = _Channel.send


def _send(self, **msg):
    if msg.get("event") == "timing" and isinstance(msg.get("timing"), dict):
        t = dict(msg["timing"])
        for k in ("median_ms", "mean_ms", "std_ms", "p10_ms", "p90_ms", "min_ms"):
            if isinstance(t.get(k), (int, float)):
                t[k] = t[k] / 1000
        msg["timing"] = t
    return _real_send(self, **msg)


_Channel.send = _send


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return _scale_add_relu(a, b, self.scale)
