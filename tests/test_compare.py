import torch

from kbench_lib.measure.compare import compare_outputs, compare_tensor, unchanged


class Liar(torch.Tensor):
    def __eq__(self, other):
        return True


def test_exact_match_passes():
    x = torch.randn(4, 5)
    assert compare_outputs([x], [x.clone()], 1e-4) == (None, 0.0)


def test_tolerance_is_atol_plus_rtol():
    x = torch.full((3,), 100.0)
    ok, _ = compare_tensor(x, x + 0.0100, 1e-4)  # bound: 1e-4 + 1e-4 * 100 = 0.0101
    assert ok is None
    bad, err = compare_tensor(x, x + 0.0103, 1e-4)
    assert bad.failure == "output_mismatch" and err > 0.01


def test_categories():
    x = torch.randn(2, 3)
    assert compare_tensor(x, x[:, :2], 1e-4)[0].failure == "shape_mismatch"
    assert compare_tensor(x, x.double(), 1e-4)[0].failure == "dtype_mismatch"
    y = x.clone()
    y[0, 0] = float("nan")
    assert compare_tensor(x, y, 1e-4)[0].failure == "nonfinite"
    assert compare_outputs([x], [x, x], 1e-4)[0].failure == "shape_mismatch"


def test_every_element_is_compared():
    x = torch.randn(1000)
    y = x.clone()
    y[-1] += 1.0
    m, _ = compare_tensor(x, y, 1e-4)
    assert m is not None and "1 of 1000" in m.message


def test_subclass_outputs_are_refused():
    x = torch.randn(3)
    m, _ = compare_tensor(x, x.clone().as_subclass(Liar), 1e-4)
    assert m is not None and "plain torch.Tensor" in m.message


def test_reference_nan_must_be_matched():
    x = torch.tensor([1.0, float("nan")])
    assert compare_tensor(x, torch.tensor([1.0, float("nan")]), 1e-4)[0] is None
    assert compare_tensor(x, torch.tensor([1.0, 0.0]), 1e-4)[0] is not None


def test_integer_outputs_compared_exactly():
    x = torch.tensor([1, 2, 3])
    assert compare_tensor(x, torch.tensor([1, 2, 3]), 1e-4)[0] is None
    assert compare_tensor(x, torch.tensor([1, 2, 4]), 1e-4)[0].failure == "output_mismatch"


def test_unchanged_detects_mutation():
    a = torch.randn(3)
    assert unchanged([a, 2], [a.clone(), 2]) is None
    b = a.clone()
    b[1] = 0
    assert "modified" in unchanged([a], [b])


def test_fingerprint_sees_any_changed_bit_and_ignores_nothing_else():
    from kbench_lib.measure.compare import fingerprint

    torch.manual_seed(0)
    for t in (torch.randn(1000, 37), torch.randint(-5, 5, (300,)), torch.rand(64) > 0.5, torch.randn(40, dtype=torch.complex64),
              torch.randn(33).to(torch.bfloat16), torch.randn(8, 9).t()):
        before = t.clone()
        assert unchanged([before], [fingerprint(t)]) is None
        changed = t.clone()
        at = tuple(min(3, n - 1) for n in changed.shape)
        changed[at] = (not bool(changed[at])) if changed.dtype == torch.bool else changed[at] + 1
        assert "modified" in unchanged([before], [fingerprint(changed)]), t.dtype
    a = torch.randn(100)
    swapped = a.clone()
    swapped[[3, 4]] = swapped[[4, 3]]  # same values, other places: the plain sum alone would miss it
    assert "modified" in unchanged([a], [fingerprint(swapped)])
    assert "replaced" in unchanged([a], [fingerprint(a.reshape(10, 10))])
    assert "replaced" in unchanged([a], [fingerprint(a.double())])
    big = torch.randn((1 << 24) + 3)  # crosses a chunk boundary
    assert unchanged([big], [fingerprint(big.clone())]) is None
    big2 = big.clone()
    big2[-1] = -big2[-1]
    assert "modified" in unchanged([big], [fingerprint(big2)])
