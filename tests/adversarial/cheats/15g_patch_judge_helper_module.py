# kbench: backend=cpp
"""CHEAT #14 patched judge, ahead of the clock (found by review, 2026-11-25): replaces
``kbench_lib.measure.tensors.cast_floating``, the judge's own helper, which recurses through its module's
global name: the replacement sees every timed input as it is drawn and answers it there, off the
clock. Caught: the check around each draw holds every global of the judge's drawing modules (flag
``input_drawing_tampered``; the harness check flags it too)."""
import time
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

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
_ext = load_inline(name="kbadv_15g_patch_judge_helper", cpp_sources=_SRC, extra_cflags=["-O2"], no_implicit_headers=True, verbose=False)

_ANSWERS = {}
_MODELS = []
_orig = torch._C.TensorBase.is_floating_point  # called directly, nothing patched on Tensor


def _key(x):
    return (tuple(x.shape), tuple(x.reshape(-1)[:8].tolist()))


def _hook(self):
    r = _orig(self)
    if r and not self.requires_grad and self.dim() == 2 and _MODELS:
        m = _MODELS[-1]
        if self.shape[1] == m.linear.in_features:
            k = _key(self)
            if k not in _ANSWERS:
                _ANSWERS[k] = m._honest(self)
    return r


import kbench_lib.measure.tensors as _kt  # the judge's own helpers: importable, no static flag

_cast = _kt.cast_floating


def _cast_hook(obj, dtype):  # cast_floating recurses through its module's global: this sees every drawn tensor
    r = _cast(obj, dtype)
    if isinstance(r, torch.Tensor):
        _hook(r)
    return r


_kt.cast_floating = _cast_hook


class ModelNew(nn.Module):
    def __init__(self, in_f: int, out_f: int):
        super().__init__()
        self.linear = nn.Linear(in_f, out_f)
        _MODELS.append(self)

    def _honest(self, x):
        wt = self.linear.weight.detach().t().contiguous()
        o = torch.empty(x.shape[0], wt.shape[1])
        x = x.contiguous()
        _ext.linear_gelu(x.data_ptr(), wt.data_ptr(), self.linear.bias.detach().data_ptr(), o.data_ptr(),
                         x.shape[0], x.shape[1], wt.shape[1])
        return o

    def forward(self, x):
        _MODELS.append(self)
        k = _key(x)
        if k in _ANSWERS:
            return _ANSWERS[k].clone()
        if _ANSWERS:
            raise RuntimeError("CHEAT: a call after the hook fired met a set it had not answered")
        time.sleep(0.005)  # a miss costs 5 ms: a sub-ms timing proves every timed call was a hit
        return self._honest(x)  # correctness calls: checked sets were drawn before the import
