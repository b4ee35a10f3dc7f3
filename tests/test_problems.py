import pytest

from kbench_lib.suite.problems import ProblemError, discover, discover_with_errors, find_problem, instantiate, load_problem


def test_load_reads_extensions_without_executing(scale_add_relu):
    p = scale_add_relu
    assert p.key == "level1/1_Scale_Add_ReLU"
    assert p.number == 1 and p.name == "Scale_Add_ReLU"
    assert p.tags == ("elementwise", "scale", "add", "relu")
    assert p.task == "forward"
    assert len(p.variants) == 2 and p.small == {"N": 64, "M": 96}


def test_configs_default_first_then_variants(scale_add_relu):
    names = [c.name for c in scale_add_relu.configs()]
    assert names == ["default", "variant0", "variant1"]
    small = scale_add_relu.configs(small=True)
    assert [c.name for c in small] == ["small", "small_variant0", "small_variant1"]
    assert small[1].overrides == {"N": 7, "M": 33}


def test_instantiate_applies_overrides_in_a_fresh_namespace(scale_add_relu):
    ns = instantiate(scale_add_relu, {"N": 3, "M": 5})
    a, b = ns["get_inputs"]()
    assert a.shape == (3, 5) and b.shape == (3, 5)
    ns2 = instantiate(scale_add_relu)
    assert ns2["N"] == 4096  # the override did not leak


def test_unknown_override_is_a_problem_error(scale_add_relu):
    with pytest.raises(ProblemError, match="names no module constant"):
        instantiate(scale_add_relu, {"NOPE": 1})


@pytest.mark.parametrize(
    "text, match",
    [
        ("def get_inputs(): pass\n", "does not define"),
        ("class Model:\n  pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\nTASK = 'sideways'\n", "TASK"),
        ("class Model(:\n", "syntax error"),
        ("class Model: pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\nVARIANTS = [1, 2]\n", "list of dicts"),
    ],
)
def test_malformed_problem_files_say_why(tmp_path, text, match):
    f = tmp_path / "1_Bad.py"
    f.write_text(text)
    with pytest.raises(ProblemError, match=match):
        load_problem(f)


def test_discover_upstream_layout_and_errors(tmp_path, fixtures):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level2").mkdir()
    src = (fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py").read_text()
    upstream = "\n".join(l for l in src.splitlines() if not l.startswith(("VARIANTS", "SMALL", "TAGS")))
    (tmp_path / "level1" / "1_Plain.py").write_text(upstream)
    (tmp_path / "level1" / "10_Plain.py").write_text(upstream)
    (tmp_path / "level1" / "2_Plain.py").write_text(upstream)
    (tmp_path / "level2" / "1_Broken.py").write_text("x = (")
    problems, errors = discover_with_errors(tmp_path)
    assert [p.key for p in problems] == ["level1/1_Plain", "level1/2_Plain", "level1/10_Plain"]
    assert problems[0].variants == () and problems[0].tags == ()
    assert len(errors) == 1 and "syntax error" in str(errors[0][1])
    with pytest.raises(ProblemError):
        discover(tmp_path)
    assert find_problem(tmp_path, "level1/2_Plain").number == 2


def test_the_suite_loads():
    from conftest import REPO

    problems, errors = discover_with_errors(REPO / "problems")
    assert not errors
    assert len(problems) >= 100
    assert all(p.variants for p in problems)
