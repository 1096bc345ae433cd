"""The subject-facing API in-process: no-ops outside reprolab, epochs.jsonl, trace records."""
import json
import math
import random
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn
from conftest import PYTHON_DIR

torch.set_num_threads(1)


def read_epochs(workdir):
    return [json.loads(line) for line in (workdir / "epochs.jsonl").read_text().splitlines()]


def test_import_does_not_import_torch():
    code = ("import sys, reprolab; reprolab.log_epoch(0, loss=1.0); reprolab.watch(object()); "
            "assert not reprolab.in_trace() and reprolab.current_run() is None; "
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules, 'heavy import'; "
            "print(reprolab.__version__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == reprolab.__version__


def test_api_is_a_no_op_outside_reprolab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = nn.Linear(2, 2)
    assert reprolab.watch(model) is model
    assert not model._forward_hooks and not model._forward_pre_hooks
    reprolab.log_epoch(0, loss=1.0, acc=0.5)
    assert not reprolab.in_trace()
    assert reprolab.current_run() is None
    assert list(tmp_path.iterdir()) == []


def test_seed_everything_seeds_random_numpy_and_torch():
    def draw():
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    reprolab.seed_everything(7)
    a = draw()
    reprolab.seed_everything(7)
    assert draw() == a
    reprolab.seed_everything(8)
    assert draw() != a


def test_log_epoch_in_eval_mode(run_context):
    workdir = run_context("eval")
    assert reprolab.current_run()["mode"] == "eval" and not reprolab.in_trace()
    model = nn.Linear(2, 2)
    reprolab.watch(model)  # eval mode: no hooks at all
    assert not model._forward_hooks and not model._forward_pre_hooks
    reprolab.log_epoch(0, loss=0.5, acc=np.float32(0.25), val_loss=torch.tensor(0.75))
    reprolab.log_epoch(1, loss=float("nan"), acc=1)
    recs = read_epochs(workdir)
    assert recs[0] == {"epoch": 0, "loss": 0.5, "acc": 0.25, "val_loss": 0.75, "nan": False}
    assert recs[1] == {"epoch": 1, "loss": None, "acc": 1.0, "nan": True}


def _train_epochs(model, x, y, loss_fn, epochs=2, batch=8, lr=0.1):
    for epoch in range(epochs):
        for i in range(0, len(x), batch):
            out = model(x[i:i + batch])
            loss = loss_fn(out, y[i:i + batch])
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= lr * p.grad
        model.eval()
        with torch.no_grad():
            model(x)  # a validation pass, which must not be what the trace records
        model.train()
        reprolab.log_epoch(epoch, loss=loss)  # a tensor that requires grad


def test_trace_records_layers(run_context):
    workdir = run_context("trace")
    assert reprolab.in_trace()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3), rnn.activation("sigmoid"))
    reprolab.watch(model)
    x = torch.randn(32, 4) * 10
    y = torch.rand(32, 3)
    _train_epochs(model, x, y, rnn.loss("mean_squared_error"))
    recs = read_epochs(workdir)
    assert [r["epoch"] for r in recs] == [0, 1]
    for rec in recs:
        assert rec["nan"] is False
        layers = rec["layers"]
        assert [(l["name"], l["kind"], l["act"]) for l in layers] == [("0", "Linear", "tanh"),
                                                                      ("2", "Linear", "sigmoid")]
        for l in layers:
            assert set(l) == {"name", "kind", "weight_norm", "grad_norm", "grad_zero_frac", "act",
                              "dead_frac", "saturated_frac", "mean_abs_out"}
            assert l["weight_norm"] > 0 and l["grad_norm"] > 0
            assert 0.0 <= l["grad_zero_frac"] <= 1.0 and 0.0 <= l["dead_frac"] <= 1.0
            assert 0.0 <= l["saturated_frac"] <= 1.0 and l["mean_abs_out"] > 0
        # inputs scaled by 10 drive many tanh pre-activations past |x| > 5
        assert layers[0]["saturated_frac"] > 0
    json.dumps(recs, allow_nan=False)


def test_trace_counts_the_optimizer_updates_of_each_epoch(run_context):
    workdir = run_context("trace")
    model = nn.Linear(2, 1)
    reprolab.watch(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 2)
    for epoch, batches in enumerate((3, 5)):
        for _ in range(batches):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        reprolab.log_epoch(epoch, loss=1.0)
    # weights changed by hand: no update a hook can see, so no count
    with torch.no_grad():
        model.weight.add_(1.0)
    reprolab.log_epoch(2, loss=1.0)
    assert [r.get("steps") for r in read_epochs(workdir)] == [3, 5, None]


def test_trace_uses_the_first_batch_of_each_epoch(run_context):
    workdir = run_context("trace")
    model = nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.fill_(1.0)
        model.bias.fill_(0.0)
    reprolab.watch(model)
    x = torch.tensor([[1.0, 2.0]])
    for scale in (1.0, 100.0):  # two batches; the second gradient is 100x the first
        model.zero_grad()
        (scale * model(x).sum()).backward()
    reprolab.log_epoch(0, loss=1.0)
    (layer,) = read_epochs(workdir)[0]["layers"]
    # d(w.x + b)/dw = x, d/db = 1  ->  ||(1, 2, 1)|| = sqrt(6)
    assert layer["grad_norm"] == pytest.approx(math.sqrt(6))
    assert layer["grad_zero_frac"] == 0.0
    assert layer["act"] is None and layer["dead_frac"] is None and layer["saturated_frac"] is None
    assert layer["mean_abs_out"] == pytest.approx(3.0)
    assert layer["weight_norm"] == pytest.approx(math.sqrt(2))
    # nothing ran in the next epoch: no statistics, only the weights
    reprolab.log_epoch(1, loss=1.0)
    (layer,) = read_epochs(workdir)[1]["layers"]
    assert layer["grad_norm"] is None and layer["mean_abs_out"] is None
    assert layer["weight_norm"] == pytest.approx(math.sqrt(2))


def test_trace_zero_initialised_relu_net_is_dead(run_context):
    workdir = run_context("trace")
    model = nn.Sequential(nn.Linear(4, 8), rnn.activation("relu"), nn.Linear(8, 2),
                          rnn.activation("softmax"))
    for layer in (model[0], model[2]):
        rnn.init_layer(layer, "zeros", "zeros")
    reprolab.watch(model)
    x = torch.randn(16, 4)
    y = nn.functional.one_hot(torch.arange(16) % 2, 2).float()
    _train_epochs(model, x, y, rnn.loss("categorical_crossentropy"), epochs=1)
    first = read_epochs(workdir)[0]["layers"][0]
    assert first["act"] == "relu"
    assert first["dead_frac"] == 1.0
    assert first["grad_norm"] == 0.0 and first["grad_zero_frac"] == 1.0


def test_trace_flags_non_finite_parameters(run_context):
    workdir = run_context("trace")
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    reprolab.watch(model)
    reprolab.log_epoch(0, loss=1.0)
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    reprolab.log_epoch(1, loss=1.0)
    recs = read_epochs(workdir)
    assert recs[0]["nan"] is False and recs[1]["nan"] is True
    assert recs[1]["layers"][0]["weight_norm"] is None


def _script_train(config, seed):
    return {"search": config["a"] + seed, "holdout": np.float64(0.5), "note": "x"}


def test_run_script_writes_result(tmp_path, capsys):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"a": 0.25}))
    out = tmp_path / "r.json"
    reprolab.run_script(_script_train, ["--config", str(cfg), "--seed", "1", "--out", str(out)])
    assert json.loads(out.read_text()) == {"search": 1.25, "holdout": 0.5, "note": "x"}
    reprolab.run_script(_script_train, ["--config", str(cfg)])
    assert json.loads(capsys.readouterr().out) == {"search": 0.25, "holdout": 0.5, "note": "x"}
    with pytest.raises(reprolab.ReprolabContractError, match="holdout"):
        reprolab.run_script(lambda c, s: {"search": 1.0}, ["--config", str(cfg)])
    assert reprolab.current_run() is None


def _curve_train(config, seed):
    for epoch, v in enumerate(config["curve"]):
        reprolab.log_epoch(epoch, val_mse=v)
    return {"search": config["curve"][-1], "holdout": 0.0}


def test_run_script_prunes_by_the_spec_in_its_environment(tmp_path, monkeypatch):
    # A command subject gets its prune spec in REPROLAB_PRUNE (as the worker gets it in the
    # request): behind the threshold (min: above it) it ends as pruned at that epoch.
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"curve": [3.0, 2.5, 2.4, 1.0]}))
    out = tmp_path / "r.json"
    argv = ["--config", str(cfg), "--out", str(out), "--workdir", str(tmp_path / "w")]
    monkeypatch.setenv("REPROLAB_PRUNE", json.dumps(
        {"key": "val_mse", "goal": "min", "thresholds": [None, 2.6, 2.0]}))
    reprolab.run_script(_curve_train, argv)
    assert json.loads(out.read_text()) == {"status": "pruned", "epoch": 2, "value": 2.4}
    assert len(read_epochs(tmp_path / "w")) == 3
    assert reprolab.current_run() is None
    # Eval mode only: a trace runs to its end; no spec, no pruning.
    reprolab.run_script(_curve_train, argv + ["--mode", "trace"])
    assert json.loads(out.read_text())["search"] == 1.0
    monkeypatch.setenv("REPROLAB_PRUNE", "")
    reprolab.run_script(_curve_train, argv)
    assert json.loads(out.read_text())["search"] == 1.0


def test_validate_result_accepts_numeric_scalars():
    s, h, extra = reprolab._validate_result({"search": torch.tensor(0.5), "holdout": np.float32(0.25),
                                             "n": np.int64(3), "arr": np.array([1.0, float("nan")])})
    assert (s, h) == (0.5, 0.25) and extra == {"n": 3, "arr": [1.0, None]}
    for bad in (0.5, None, {"search": "0.5", "holdout": 1}, {"search": True, "holdout": 1},
                {"search": torch.ones(2), "holdout": 1}):
        with pytest.raises(reprolab.ReprolabContractError):
            reprolab._validate_result(bad)
