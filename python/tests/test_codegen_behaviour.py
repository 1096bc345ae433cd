"""reprolab.codegen_behaviour: the generated function next to the reference on a test's calls."""
import textwrap

import pytest

torch = pytest.importorskip("torch")

from reprolab import codegen_behaviour as b  # noqa: E402


def _run(tmp_path, reference, candidate, entry, *calls):
    ref_path = tmp_path / "reference.py"
    ref_path.write_text(textwrap.dedent(reference))
    cand_path = tmp_path / "solution_under_test.py"
    cand_path.write_text(textwrap.dedent(candidate))
    ns = {}
    exec(compile(cand_path.read_text(), str(cand_path), "exec"), ns)
    rec = b.Recorder(ns[entry])
    for args in calls:
        try:
            rec(*args)
        except Exception:
            pass
    ref = b.load_reference(str(ref_path), entry)
    return b.analyse(rec, ref, cand_path.read_text(), ref_path.read_text(), entry)


def test_values_scaled_and_close(tmp_path):
    ref = """
        import torch
        def f(x):
            return x * 2.0
    """
    f = _run(tmp_path, ref, ref.replace("2.0", "1.0"), "f", (torch.arange(1.0, 5.0),))
    assert f["finding"] == "values" and f["ratio"] == 0.5 and not f["close"]
    f = _run(tmp_path, ref, ref.replace("x * 2.0", "x * 2.0 + 0.01"), "f",
             (torch.arange(1.0, 5.0),))
    assert f["finding"] == "values" and f["close"]


def test_shape_dtype_nan_and_type(tmp_path):
    ref = """
        import torch
        def f(x):
            return x.sum(dim=0)
    """
    x = (torch.ones(3, 2),)
    assert _run(tmp_path, ref, ref.replace("dim=0", "dim=1"), "f", x)["finding"] == "shape"
    assert _run(tmp_path, ref, ref.replace("x.sum(dim=0)", "x.sum(dim=0).double()"), "f",
                x)["finding"] == "dtype"
    assert _run(tmp_path, ref, ref.replace("x.sum(dim=0)", "x.sum(dim=0) / 0"), "f",
                x)["finding"] == "nan"
    assert _run(tmp_path, ref, ref.replace("x.sum(dim=0)", "x.sum(dim=0).numpy()"), "f",
                x)["finding"] == "type"


def test_exceptions_guards_and_ignored_arguments(tmp_path):
    ref = """
        import torch
        def f(x, lengths=None):
            if x.numel() == 0:
                raise ValueError("empty input")
            if lengths is not None:
                x = x[: int(lengths)]
            return x.mean()
    """
    cand = """
        import torch
        def f(x, lengths=None):
            return x.mean()
    """
    got = _run(tmp_path, ref, cand, "f", (torch.zeros(0),))
    assert got["finding"] == "reference_raises"
    assert got["guard"] == "x.numel() == 0" and got["edge"] == ["empty"]
    got = _run(tmp_path, ref, cand, "f", (torch.tensor([1.0, 2.0, 9.0]), 2))
    assert got["ignored_args"] == ["lengths"]
    boom = cand.replace("return x.mean()", "return x.mean() + torch.cat([x, x.view(1, -1)])")
    got = _run(tmp_path, ref, boom, "f", (torch.ones(2),))
    assert got["finding"] == "candidate_raises"
    assert "raised_at" not in got  # only frames of solution.py are named
    assert "RuntimeError" in got["candidate"]


def test_same_behaviour_and_library_arguments(tmp_path):
    ref = """
        import torch
        def f(n):
            return torch.hann_window(n, periodic=True)
    """
    assert _run(tmp_path, ref, ref, "f", (8,))["finding"] == "same"
    got = _run(tmp_path, ref, ref.replace("True", "False"), "f", (8,))
    assert got["finding"] == "values"
    assert got["library_args"] == ["hann_window(periodic=False vs True)"]


def test_no_ratio_over_a_single_or_repeated_value(tmp_path):
    ref = """
        def f(n):
            return [1.0] * n
    """
    got = _run(tmp_path, ref, ref.replace("1.0", "0.5"), "f", (2,))
    assert got["finding"] == "values" and "ratio" not in got and not got["close"]


def test_a_sentinel_is_a_conventional_fill_value(tmp_path):
    ref = """
        import torch
        def f(x):
            out = x.clone()
            out[x > 2] = -1.0
            return out
    """
    x = (torch.tensor([1.0, 2.0, 3.0, 4.0]),)
    got = _run(tmp_path, ref, ref.replace("out[x > 2] = -1.0", "pass"), "f", x)
    assert got["sentinel"] == "-1.0"
    half = ref.replace("-1.0", "0.5")
    got = _run(tmp_path, half, half.replace("= 0.5", "= 0.25"), "f", x)
    assert got["finding"] == "values" and "sentinel" not in got
