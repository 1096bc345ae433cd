"""reprolab.codegen_behaviour: the generated function next to the reference on a test's calls."""
import textwrap

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

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


def test_a_reshape_for_a_permute_is_a_layout_not_a_reordering(tmp_path):
    ref = """
        import torch
        def f(x):
            return x.permute(0, 3, 1, 2)
    """
    x = (torch.arange(2.0 * 3 * 4 * 5).reshape(2, 4, 5, 3),)
    got = _run(tmp_path, ref, ref.replace("x.permute(0, 3, 1, 2)", "x.reshape(2, 3, 4, 5)"), "f", x)
    assert got["finding"] == "values" and got["permuted"] and got["layout"]
    # the same values moved as whole rows, within rows, or as a transpose: a reordering
    rows = """
        import torch
        def f(x):
            return x
    """
    m = (torch.arange(12.0).reshape(4, 3),)
    for reordered in ("x.flip(0)", "x.flip(1)"):
        got = _run(tmp_path, rows, rows.replace("return x", f"return {reordered}"), "f", m)
        assert got["finding"] == "values" and got["permuted"], reordered
        assert not got.get("layout"), reordered
    square = (torch.arange(16.0).reshape(4, 4),)
    got = _run(tmp_path, rows, rows.replace("return x", "return x.t()"), "f", square)
    assert got["permuted"] and not got.get("layout")


def test_a_reshape_of_a_one_hot_is_a_layout_although_its_rows_look_reordered(tmp_path):
    # a one-hot has few distinct rows, so a reshape's rows can match the reference's rows as a
    # multiset; the exact relation (the reference transposed back, then reshaped) still holds
    ref = """
        import torch
        def f(y):
            return torch.nn.functional.one_hot(y, 3).permute(0, 3, 1, 2).float()
    """
    y = (torch.tensor([[[0, 1, 2], [2, 1, 0]]]),)
    got = _run(tmp_path, ref, ref.replace(".permute(0, 3, 1, 2)", ".reshape(1, 3, 2, 3)"), "f", y)
    assert got["finding"] == "values" and got["permuted"] and got["layout"]


def test_one_window_lost_at_the_end_is_off_by_one_and_another_count_is_not(tmp_path):
    ref = """
        import numpy as np
        def windows(x, size):
            return np.stack([x[i:i + size] for i in range(len(x) - size + 1)])
    """
    x = (np.arange(8.0), 3)
    got = _run(tmp_path, ref, ref.replace("- size + 1", "- size"), "windows", x)
    assert got["finding"] == "shape" and got["off_by_one"]
    # the same count, starting one step late: also one window fewer, at the start
    got = _run(tmp_path, ref, ref.replace("range(len(x) - size + 1)", "range(1, len(x) - size + 1)"),
               "windows", x)
    assert got["off_by_one"]
    # a stride of 2: fewer windows, and not the reference's minus one
    got = _run(tmp_path, ref, ref.replace("range(len(x)", "range(0, len(x)").replace("+ 1)", "+ 1, 2)"), "windows", x)
    assert got["finding"] == "shape" and not got["off_by_one"]
    # a list one element short
    lref = """
        def upto(n):
            return list(range(n + 1))
    """
    got = _run(tmp_path, lref, lref.replace("n + 1", "n"), "upto", (5,))
    assert got["finding"] == "shape" and got["off_by_one"]
    # two tokens decoded out of three: too short to tell an off-by-one from another answer
    got = _run(tmp_path, lref, lref.replace("n + 1", "n"), "upto", (2,))
    assert got["finding"] == "shape" and not got["off_by_one"]


# --- a class entry point: the construction and the calls of the instance's methods ----------
def _run_class(tmp_path, reference, candidate, entry, test):
    """Build the candidate's class through a Recorder, run `test(cls)` on it (as a test would,
    exceptions swallowed), and analyse. The candidate's file is named solution.py so that the
    line that raised is named."""
    ref_path = tmp_path / "reference.py"
    ref_path.write_text(textwrap.dedent(reference))
    cand_path = tmp_path / "solution.py"
    cand_path.write_text(textwrap.dedent(candidate))
    ns = {"__name__": "solution_for_test"}
    exec(compile(cand_path.read_text(), str(cand_path), "exec"), ns)
    rec = b.Recorder(ns[entry])
    try:
        test(rec)
    except Exception:
        pass
    finally:
        rec.restore()
    ref = b.load_reference(str(ref_path), entry)
    return b.analyse(rec, ref, cand_path.read_text(), ref_path.read_text(), entry)


_NET = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self, n, k, p=0.0):
            super().__init__()
            self.fc = nn.Linear(n, k)
            self.drop = nn.Dropout(p)

        def forward(self, x):
            if x.shape[-1] % 2:
                raise ValueError("the last dimension must be even")
            return self.drop(self.fc(x.flatten(start_dim=1)))
"""


def test_a_class_forward_that_raises_is_found_with_its_line(tmp_path):
    def test(Net):
        model = Net(6, 3)
        model(torch.randn(2, 3, 3))

    # no check: fails inside the linear layer on another input than the reference rejects
    cand = _NET.replace('raise ValueError("the last dimension must be even")', "pass")
    got = _run_class(tmp_path, _NET, cand, "Net", test)
    assert got["finding"] == "both_raise" and got["method"] == "forward"
    assert got["call"] == 1 and got["calls"] == 2
    assert got["reference"].startswith("ValueError")
    assert got["guard"] == "x.shape[-1] % 2"
    # the candidate alone raises: the input is not flattened
    no_flatten = _NET.replace("x.flatten(start_dim=1)", "x")

    def test2(Net):
        Net(4, 3)(torch.randn(2, 2, 2))

    got = _run_class(tmp_path, _NET, no_flatten, "Net", test2)
    assert got["finding"] == "candidate_raises" and got["method"] == "forward"
    assert got["raised_at"].startswith("solution.py:") and "in forward" in got["raised_at"]


def test_a_class_forward_with_the_wrong_shape(tmp_path):
    def test(Net):
        model = Net(4, 3).eval()
        assert model(torch.randn(5, 4)).shape == (5, 3)

    cand = _NET.replace("return self.drop(self.fc(x.flatten(start_dim=1)))",
                        "return self.drop(self.fc(x.flatten(start_dim=1))).mean(0)")
    got = _run_class(tmp_path, _NET, cand, "Net", test)
    assert got["finding"] == "shape" and got["method"] == "forward"
    assert "(3,)" in got["candidate"] and "(5, 3)" in got["reference"]


def test_a_correct_class_is_the_same_after_the_test_changed_it(tmp_path):
    # The test zeroes the weights, switches modes and uses dropout: the reference instance gets
    # the candidate's parameters and flags before each replayed call, and the same random state.
    def test(Net):
        torch.manual_seed(0)
        model = Net(4, 3, p=0.5)
        with torch.no_grad():
            model.fc.weight.zero_()
        model.train()
        a = model(torch.ones(2, 4))
        model.eval()
        b_ = model(torch.ones(2, 4))
        import copy
        copy.deepcopy(model)(torch.ones(1, 4))  # a copy's calls are not recorded
        assert torch.equal(a, b_)

    got = _run_class(tmp_path, _NET, _NET, "Net", test)
    assert got["finding"] == "same" and got["calls"] == 3


def test_a_method_that_leaves_its_module_in_another_state(tmp_path):
    ref = """
        import torch
        from torch import nn

        class Counter(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("seen", torch.zeros(()))

            def forward(self, x):
                self.seen += x.shape[0]
                return x
    """
    got = _run_class(tmp_path, ref, ref.replace("self.seen += x.shape[0]", "pass"), "Counter",
                     lambda C: C()(torch.ones(3, 1)))
    assert got["finding"] == "side_effect" and got["method"] == "forward"
    assert "self after forward.seen" in got["side_effect"]


_STOPPER = """
    class Stopper:
        def __init__(self, patience):
            self.patience = patience
            self.best = float("inf")
            self.bad = 0

        def step(self, loss):
            if loss < self.best:
                self.best, self.bad = loss, 0
            else:
                self.bad += 1
            return self.bad >= self.patience
"""


def test_a_plain_class_is_compared_by_its_attributes_and_method_results(tmp_path):
    def test(Stopper):
        s = Stopper(2)
        for loss in (3.0, 2.0, 2.5, 2.4):
            s.step(loss)

    got = _run_class(tmp_path, _STOPPER, _STOPPER, "Stopper", test)
    assert got["finding"] == "same" and got["calls"] == 5
    late = _STOPPER.replace("self.bad >= self.patience", "self.bad > self.patience")
    got = _run_class(tmp_path, _STOPPER, late, "Stopper", test)
    assert got["finding"] == "values" and got["method"] == "step" and got["call"] == 4


def test_the_recorder_puts_the_class_back(tmp_path):
    ns = {}
    exec(textwrap.dedent(_STOPPER), ns)
    original = ns["Stopper"].step
    rec = b.Recorder(ns["Stopper"])
    assert ns["Stopper"].step is not original
    rec.restore()
    assert ns["Stopper"].step is original


def test_module_states_are_copied_within_a_budget_per_test(tmp_path, monkeypatch):
    """Recording runs in passing tests too: the module states it copies before and after each
    method call stop at the test's budget, and a module is never copied through its __dict__."""
    ns = {"__name__": "solution_for_test"}
    exec(textwrap.dedent(_NET), ns)
    values = 4 * 3 + 3  # Linear(4, 3): weight and bias
    monkeypatch.setattr(b, "MAX_RECORDED_STATE_VALUES", 5 * values)
    rec = b.Recorder(ns["Net"])
    try:
        net = rec(4, 3)
        for _ in range(4):
            net(torch.ones(2, 4))
    finally:
        rec.restore()
    methods = [c for c in rec.calls if c.get("method") == "forward"]
    copied = [s is not None for c in methods for s in (c["state"], c["self_after"])]
    assert copied == [True] * 5 + [False] * 3
    assert b._instance_state(net, limit=values - 1) is None
