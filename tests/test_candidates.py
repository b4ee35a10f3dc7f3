import pytest

from kbench_lib.core.candidates import Candidate, detect_backend, load_candidate


@pytest.mark.parametrize(
    "src, backend",
    [
        ("from torch.utils.cpp_extension import load_inline\nm = load_inline(name='a', cpp_sources='', cuda_sources='', functions=[])", "cuda"),
        ("from torch.utils.cpp_extension import load_inline\nm = load_inline(name='a', cpp_sources='', functions=[])", "cpp"),
        ("import triton\nimport triton.language as tl\n@triton.jit\ndef k(x):\n    tl.load(x)\n", "triton"),
        ("import torch\nclass ModelNew: pass\n", "torch"),
        ("# kbench: backend=cuda\nimport torch\n", "cuda"),
        ("this is ( not python", "torch"),
    ],
)
def test_detect_backend(src, backend):
    assert detect_backend(src) == backend


def test_identical_sources_share_a_hash(tmp_path):
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text("import torch\n")
    b.write_text("import torch\n")
    assert load_candidate(a).sha == load_candidate(b).sha
    assert Candidate("x", "cpp").sha != Candidate("x", "cuda").sha


def test_unknown_backend_rejected(tmp_path):
    f = tmp_path / "c.py"
    f.write_text("")
    with pytest.raises(ValueError):
        load_candidate(f, "fortran")
