# kbench: backend=cpp
"""LEGIT (beyond the threat model's list (docs/THREAT_MODEL.md)): relu(a * scale + b) in a loop parallelised with OpenMP, the usual
way to use several cores in a CPU kernel. The OpenMP runtime keeps its worker threads, idle, after
the parallel region: they do no work outside the call. Must pass with no flag."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <Python.h>
typedef long long i64;

static PyObject* py_scale_add_relu(PyObject*, PyObject* args) {
    i64 a, b, o, n; double s;
    if (!PyArg_ParseTuple(args, "LLLLd", &a, &b, &o, &n, &s)) return nullptr;
    const float* pa = (const float*)a;
    const float* pb = (const float*)b;
    float* po = (float*)o;
    const float fs = (float)s;
    #pragma omp parallel for schedule(static) num_threads(2)
    for (i64 i = 0; i < n; ++i) { float v = pa[i] * fs + pb[i]; po[i] = v > 0.f ? v : 0.f; }
    Py_RETURN_NONE;
}

static PyMethodDef kb_methods[] = {
    {"scale_add_relu", py_scale_add_relu, METH_VARARGS, "scale_add_relu(a, b, out, n, scale)"},
    {nullptr, nullptr, 0, nullptr}};
#define KB_CAT2(a, b) a##b
#define KB_CAT(a, b) KB_CAT2(a, b)
#define KB_STR2(a) #a
#define KB_STR(a) KB_STR2(a)
static PyModuleDef kb_module = {PyModuleDef_HEAD_INIT, KB_STR(TORCH_EXTENSION_NAME), nullptr, -1, kb_methods};
PyMODINIT_FUNC KB_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&kb_module); }
"""
_ext = load_inline(name="kbadv_openmp", cpp_sources=_SRC, extra_cflags=["-O2", "-fopenmp"], extra_ldflags=["-fopenmp"], no_implicit_headers=True, verbose=False)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty_like(a)
        _ext.scale_add_relu(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), float(self.scale))
        return out
