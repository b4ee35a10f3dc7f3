"""Torch's JIT builds through the judge's cache (kbench_lib.isolation.worker.extension_cache): a
failed compile is not compiled again, a candidate's own build folder is its cache entry. Real
compiles of C++ on the CPU."""
import os

import pytest

from kbench_lib.isolation.worker import extension_cache

pytestmark = pytest.mark.slow

BROKEN = "torch::Tensor f(torch::Tensor a) { return this does not parse; }"


def test_a_failed_compile_fails_again_at_once_with_the_same_error(tmp_path, monkeypatch):
    from torch.utils.cpp_extension import load_inline

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "entry"
    build = extension_cache.cached(load_inline, root)
    with pytest.raises(RuntimeError) as first:
        build(name="kb_broken", cpp_sources=BROKEN, functions=["f"], build_directory="rel", no_implicit_headers=True, verbose=False)
    assert "Error building extension" in str(first.value)
    [record] = (root / extension_cache.FAILED).iterdir()
    [folder] = (root / extension_cache.FOLDERS).iterdir()
    assert (folder / "build.ninja").is_file() and not (tmp_path / "rel").exists()  # built in the entry, not where it asked
    for f in folder.iterdir():
        f.unlink()
    with pytest.raises(RuntimeError) as again:
        build(name="kb_broken", cpp_sources=BROKEN, functions=["f"], build_directory="rel", no_implicit_headers=True, verbose=True)
    assert str(again.value) == str(first.value) and not any(folder.iterdir())  # no compile ran
    other = BROKEN.replace("f(", "g(")
    with pytest.raises(RuntimeError):  # another source is another call: compiled (and failing) on its own
        build(name="kb_broken", cpp_sources=other, functions=["g"], no_implicit_headers=True, verbose=False)
    assert len(list((root / extension_cache.FAILED).iterdir())) == 2 and record.is_file()


def test_the_key_is_the_call_not_where_or_how_loudly_it_builds(tmp_path):
    from torch.utils.cpp_extension import load, load_inline

    a = extension_cache.call_key(load_inline, ("x", "src"), {"build_directory": "here", "verbose": True})
    b = extension_cache.call_key(load_inline, ("x",), {"cpp_sources": "src"})
    c = extension_cache.call_key(load_inline, ("x", "src"), {"extra_cflags": ["-O3"]})
    assert a == b != c
    src = tmp_path / "k.cpp"
    src.write_text("int a;")
    k1 = extension_cache.call_key(load, ("x", [str(src)]), {})
    src.write_text("int b;")
    assert extension_cache.call_key(load, ("x", [str(src)]), {}) != k1  # load reads files: their contents are the key
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "k.cpp").write_text("int b;")
    assert extension_cache.call_key(load, ("x", [str(tmp_path / "elsewhere" / "k.cpp")]), {}) == \
        extension_cache.call_key(load, ("x", [str(src)]), {})  # not the folder they were written to


def test_a_compile_in_init_is_the_build_stages(scale_add_relu, fixtures, fast_cpu_opts, tmp_path, monkeypatch):
    from kbench_lib.core.candidates import load_candidate
    from kbench_lib.judging import build
    from kbench_lib.judging.build_job import build_candidate
    from kbench_lib.judging.pipeline import judge

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    c = load_candidate(fixtures / "candidates" / "scale_add_relu_init_fallback.py")
    b = build_candidate(c, "cpu", fast_cpu_opts, problem_path=scale_add_relu.path)
    assert b.failure is None  # a compile that fails in __init__ is the run's to judge, not a build failure
    entry = build.build_dir(c, "cpu")
    [failed] = (entry / extension_cache.FAILED).iterdir()  # the build's model compiled it
    seen = failed.stat().st_mtime_ns
    v = judge(scale_add_relu, c, fast_cpu_opts)
    assert v.correct and v.failure is None and v.build_cached, v.message
    assert list((entry / extension_cache.FAILED).iterdir()) == [failed] and failed.stat().st_mtime_ns == seen  # replayed, never compiled again


def test_a_compile_at_the_first_call_is_the_build_stages(scale_add_relu, fixtures, fast_cpu_opts, tmp_path, monkeypatch):
    """The build stage calls a model made on the meta device once: an extension compiled at the
    first call of ``forward`` is compiled there, and the run replays it."""
    from kbench_lib.core.candidates import load_candidate
    from kbench_lib.judging import build
    from kbench_lib.judging.build_job import build_candidate
    from kbench_lib.judging.pipeline import judge

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    c = load_candidate(fixtures / "candidates" / "scale_add_relu_first_call_fallback.py")
    b = build_candidate(c, "cpu", fast_cpu_opts, problem_path=scale_add_relu.path)
    assert b.failure is None
    entry = build.build_dir(c, "cpu")
    [failed] = (entry / extension_cache.FAILED).iterdir()  # the meta call compiled it
    seen = failed.stat().st_mtime_ns
    v = judge(scale_add_relu, c, fast_cpu_opts)
    assert v.correct and v.failure is None and v.build_cached, v.message
    assert list((entry / extension_cache.FAILED).iterdir()) == [failed] and failed.stat().st_mtime_ns == seen  # replayed


def test_a_name_made_unique_by_the_process_id_is_one_name_in_every_process(monkeypatch):
    from torch.utils.cpp_extension import load_inline

    assert extension_cache.stable_name("conv_4711", 4711) == "conv_pid"
    assert extension_cache.stable_name("v4711_47110_4711", 4711) == "v4711_47110_pid"  # a word of its own only
    assert extension_cache.stable_name("conv2d_2", 2) == "conv2d_pid"  # in a PID namespace the id is small
    keys = set()
    for pid in (4711, 815):
        monkeypatch.setattr(os, "getpid", lambda pid=pid: pid)
        keys.add(extension_cache.call_key(load_inline, (f"ext_{pid}", "src"), {}, pid_names=True))
    assert len(keys) == 1
    # a source that never asks for its process's id keeps its names as written, whatever the id
    assert extension_cache.names_by_pid('name=f"ext_{os.getpid()}"') and not extension_cache.names_by_pid('name="conv_2"')
    monkeypatch.setattr(os, "getpid", lambda: 2)
    fixed = extension_cache.call_key(load_inline, ("conv_2", "src"), {})
    monkeypatch.setattr(os, "getpid", lambda: 3)
    assert extension_cache.call_key(load_inline, ("conv_2", "src"), {}) == fixed


def _load_bound(sources):
    import inspect

    from torch.utils.cpp_extension import load

    return inspect.signature(load).bind("ext", sources)


def test_a_loads_sources_are_read_from_copies_written_once(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):  # each process writes the same files into a folder of its own
        folder.mkdir()
        (folder / "k.cu").write_text('#include "k.cuh"\n#include <torch/extension.h>\nint k;')
        (folder / "k.cuh").write_text("#pragma once")
        (folder / "m.cpp").write_text("int m;")
    copies = tmp_path / "entry"
    seen = []
    for folder in (first, second):
        bound = _load_bound([str(folder / "k.cu"), str(folder / "m.cpp")])
        extension_cache._read_copies(bound, copies)
        assert bound.arguments["sources"] == [str(copies / "k.cu"), str(copies / "m.cpp")]
        seen.append({p.name: p.stat().st_mtime_ns for p in copies.iterdir()})
    assert set(seen[0]) == {"k.cu", "k.cuh", "m.cpp"} and seen[0] == seen[1]  # the header went with it; nothing rewritten
    (second / "m.cpp").write_text("int m2;")
    bound = _load_bound(str(second / "m.cpp"))
    extension_cache._read_copies(bound, copies)
    assert bound.arguments["sources"] == str(copies / "m.cpp") and (copies / "m.cpp").read_text() == "int m2;"


def test_sources_that_cannot_share_one_folder_are_left_where_they_are(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "h.cuh").write_text("#pragma once")
    (tmp_path / "k.cu").write_text('#include "sub/h.cuh"\nint k;')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "k.cu").write_text("int k2;")
    for sources in ([str(tmp_path / "k.cu")],  # a header in a folder below it
                    [str(tmp_path / "sub" / "h.cuh"), str(tmp_path / "other" / "k.cu"), str(tmp_path / "k.cu")],  # one name twice
                    [str(tmp_path / "missing.cu")]):
        bound = _load_bound(sources)
        extension_cache._read_copies(bound, tmp_path / "entry")
        assert bound.arguments["sources"] == sources


def test_a_load_per_process_is_compiled_once_by_the_build_stage(scale_add_relu, fixtures, fast_cpu_opts, tmp_path, monkeypatch):
    """Sources written afresh into a temporary folder, a name with the process's id: the run (another
    process) finds the build stage's extension and compiles nothing."""
    from kbench_lib.core.candidates import load_candidate
    from kbench_lib.judging import build
    from kbench_lib.judging.build_job import build_candidate
    from kbench_lib.judging.pipeline import judge

    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path / "cache"))
    c = load_candidate(fixtures / "candidates" / "scale_add_relu_load_per_process.py")
    b = build_candidate(c, "cpu", fast_cpu_opts, problem_path=scale_add_relu.path)
    assert b.failure is None, b.message
    entry = build.build_dir(c, "cpu")
    [library] = entry.glob("kb_scale_add_relu_pid/*.so")
    seen = library.stat().st_mtime_ns
    v = judge(scale_add_relu, c, fast_cpu_opts)
    assert v.correct and v.failure is None and v.build_cached, v.message
    assert [p.name for p in entry.glob("kb_scale_add_relu_*")] == ["kb_scale_add_relu_pid"]
    assert library.stat().st_mtime_ns == seen  # loaded, never compiled again
