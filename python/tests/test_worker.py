"""The worker end to end, through a real `python -m reprolab.worker` subprocess."""
import json
import os
import signal
import textwrap

import pytest

from conftest import Worker

SUBJECT = textwrap.dedent('''
    import os
    import resource
    import signal
    import sys

    import numpy as np
    import torch
    from torch import nn

    import reprolab
    import reprolab.nn as rnn

    N = 64


    def _fit(config, seed, zero=False):
        torch.set_num_threads(1)
        reprolab.seed_everything(seed)
        g = torch.Generator().manual_seed(123)
        x = torch.randn(N, 8, generator=g)
        y = (x[:, 0] > 0).long()
        y1 = nn.functional.one_hot(y, 2).float()
        model = nn.Sequential(nn.Linear(8, 16), rnn.activation("relu"), nn.Linear(16, 2),
                              rnn.activation("softmax"))
        for layer in (model[0], model[2]):
            rnn.init_layer(layer, "zeros" if zero else "glorot_uniform", "zeros")
        reprolab.watch(model)
        loss_fn = rnn.loss("categorical_crossentropy")
        opt = rnn.optimizer("adam", model.parameters(), 0.01)
        for epoch in range(config.get("epochs", 2)):
            for i in range(0, N, 16):
                loss = loss_fn(model(x[i:i + 16]), y1[i:i + 16])
                opt.zero_grad()
                loss.backward()
                opt.step()
            model.eval()
            with torch.no_grad():
                acc = float((model(x).argmax(1) == y).float().mean())
            model.train()
            reprolab.log_epoch(epoch, loss=loss, acc=acc)
        return acc


    def train(config, seed):
        acc = _fit(config, seed)
        return {"search": acc, "holdout": acc, "own_group": os.getpgid(0) == os.getpid(),
                "cwd": os.getcwd(), "in_trace": reprolab.in_trace(),
                "rlimit_data": resource.getrlimit(resource.RLIMIT_DATA)[0],
                "main": sys.path[0], "weird": float("inf")}


    def train_zero(config, seed):
        acc = _fit(config, seed, zero=True)
        return {"search": acc, "holdout": acc}


    def train_noisy(config, seed):
        chunk = "x" * 1023 + "\\n"
        for _ in range(1024):
            sys.stdout.write(chunk)
            sys.stderr.write(chunk)
        print('{"ev": "done", "id": "fake"}')
        os.write(1, b"raw fd 1 write\\n")
        os.write(2, b"raw fd 2 write\\n")
        print("NOISY-MARKER", flush=True)
        stdin = sys.stdin.read()
        return {"search": 1.0, "holdout": 1.0, "stdin": stdin}


    class SubjectError(Exception):
        pass


    def train_raises(config, seed):
        raise ValueError("boom from the subject")


    def train_custom(config, seed):
        raise SubjectError("custom failure")


    def train_wrong_type(config, seed):
        return 0.5


    def train_missing_key(config, seed):
        return {"search": 0.5}


    def train_nan(config, seed):
        return {"search": float("nan"), "holdout": float("inf")}


    def train_sys_exit(config, seed):
        sys.exit(3)


    def train_memory_error(config, seed):
        raise MemoryError("no room")


    def train_big_alloc(config, seed):
        # 4 GiB of address space, never touched: refused only by RLIMIT_DATA
        a = np.empty(4 * 2**30, dtype=np.uint8)
        return {"search": float(a.nbytes), "holdout": 0.0}


    def train_optimizers(config, seed):
        changed = {}
        for name in rnn.OPTIMIZERS:
            p = nn.Parameter(torch.tensor([1.0, -2.0]))
            opt = rnn.optimizer(name, [p], 0.1)
            opt.zero_grad()
            (p ** 2).sum().backward()
            opt.step()
            changed[name] = bool((p.detach() != torch.tensor([1.0, -2.0])).all())
        groups = {name: {k: v for k, v in rnn.optimizer(name, [nn.Parameter(torch.zeros(1))], 0.5)
                         .param_groups[0].items() if isinstance(v, (int, float, tuple))}
                  for name in rnn.OPTIMIZERS}
        return {"search": 1.0, "holdout": 1.0, "changed": changed, "groups": groups}


    def train_big_tensor(config, seed):
        t = torch.empty(4 * 2**30, dtype=torch.uint8)  # torch's allocator: a RuntimeError
        return {"search": float(t.numel()), "holdout": 0.0}


    def train_hard_exit(config, seed):
        os._exit(7)


    def train_killed(config, seed):
        os.kill(os.getpid(), signal.SIGKILL)


    def train_curve(config, seed):
        # A fixed validation curve, whatever the subject catches: log_epoch's TrialPruned is a
        # BaseException, so `except Exception` lets it through.
        for epoch, v in enumerate(config["curve"]):
            try:
                reprolab.log_epoch(epoch, loss=1.0 - (v or 0.0), val_acc=v)
            except Exception:
                pass
        return {"search": config["curve"][-1], "holdout": 0.0, "epochs_run": len(config["curve"])}
''')


@pytest.fixture(scope="module")
def subject(tmp_path_factory):
    d = tmp_path_factory.mktemp("subject")
    (d / "train.py").write_text(SUBJECT)
    return d


@pytest.fixture(scope="module")
def ready(worker):
    ev = worker.wait_ready()
    assert ev["ev"] == "ready"
    return worker


class Run:
    def __init__(self, started, done, workdir):
        self.started, self.done, self.workdir = started, done, workdir

    @property
    def result(self):
        return json.loads((self.workdir / "result.json").read_text())

    @property
    def epochs(self):
        return [json.loads(l) for l in (self.workdir / "epochs.jsonl").read_text().splitlines()]

    @property
    def output(self):
        return (self.workdir / "output.log").read_text()


_counter = [0]


def run_eval(worker, subject, tmp_path, func="train", mode="eval", **extra):
    _counter[0] += 1
    rid = f"e{_counter[0]}"
    workdir = tmp_path / rid
    req = {"op": "eval", "id": rid, "subject_dir": str(subject), "entry": f"train.py:{func}",
           "config": {"epochs": 2}, "seed": 1, "mode": mode, "workdir": str(workdir),
           "memory_mb": None}
    req.update(extra)
    worker.send(req)
    started = worker.event()
    assert started["ev"] == "started" and started["id"] == rid, started
    assert isinstance(started["pid"], int) and started["pid"] != worker.proc.pid
    done = worker.event()
    assert done == {"ev": "done", "id": rid, "exit_code": done["exit_code"], "signal": done["signal"]}
    return Run(started, done, workdir)


def test_ready_event(ready):
    ev = ready.ready
    assert ev["pid"] == ready.proc.pid
    assert ev["python"].count(".") == 2 and ev["torch"].startswith("2.")
    assert ev["import_s"] > 0


def test_eval_ok(ready, subject, tmp_path):
    r = run_eval(ready, subject, tmp_path, memory_mb=3072)
    assert r.done["exit_code"] == 0 and r.done["signal"] is None
    res = r.result
    assert res["status"] == "ok" and "nonfinite" not in res
    assert 0.0 <= res["search"] <= 1.0 and res["holdout"] == res["search"]
    extra = res["extra"]
    assert extra["own_group"] is True and extra["in_trace"] is False
    assert os.path.realpath(extra["cwd"]) == os.path.realpath(subject)
    assert os.path.realpath(extra["main"]) == os.path.realpath(subject)
    # The cap is what the evaluation may add on top of the data segment it inherited.
    assert extra["rlimit_data"] >= 3072 * 2**20
    assert extra["weird"] is None  # non-finite extras are made JSON-safe
    epochs = r.epochs
    assert [e["epoch"] for e in epochs] == [0, 1]
    assert all("layers" not in e and e["nan"] is False and e["loss"] > 0 for e in epochs)
    # same config and seed again: same result (the worker's state does not leak between runs)
    assert run_eval(ready, subject, tmp_path, memory_mb=3072).result["search"] == res["search"]


def test_trace(ready, subject, tmp_path):
    r = run_eval(ready, subject, tmp_path, mode="trace")
    assert r.result["status"] == "ok" and r.result["extra"]["in_trace"] is True
    epochs = r.epochs
    assert len(epochs) == 2
    for e in epochs:
        layers = e["layers"]
        assert [(l["name"], l["kind"], l["act"]) for l in layers] == [("0", "Linear", "relu"),
                                                                      ("2", "Linear", "softmax")]
        for l in layers:
            assert l["grad_norm"] > 0 and l["weight_norm"] > 0
            assert 0 <= l["grad_zero_frac"] <= 1 and 0 <= l["dead_frac"] <= 1
            assert l["saturated_frac"] == 0.0 and l["mean_abs_out"] > 0


def test_trace_zero_initialised_relu(ready, subject, tmp_path):
    r = run_eval(ready, subject, tmp_path, func="train_zero", mode="trace")
    assert r.result["status"] == "ok"
    first = r.epochs[0]["layers"][0]
    assert first["dead_frac"] == 1.0
    assert first["grad_norm"] == 0.0 and first["grad_zero_frac"] == 1.0


def test_noisy_subject_does_not_corrupt_events(ready, subject, tmp_path):
    r = run_eval(ready, subject, tmp_path, func="train_noisy")
    assert r.result["status"] == "ok"
    assert r.result["extra"]["stdin"] == ""  # the subject cannot read the protocol's stdin
    out = r.output
    assert "NOISY-MARKER" in out and "raw fd 1 write" in out and "raw fd 2 write" in out
    assert len(out) > 2 * 2**20
    assert not any("fake" in line for line in ready.raw)


def test_exception(ready, subject, tmp_path):
    res = run_eval(ready, subject, tmp_path, func="train_raises").result
    assert res["status"] == "exception" and res["type"] == "ValueError"
    assert res["message"] == "boom from the subject"
    assert "Traceback" in res["traceback"] and 'raise ValueError("boom from the subject")' in res["traceback"]
    res = run_eval(ready, subject, tmp_path, func="train_custom").result
    assert res["status"] == "exception" and res["type"] == "train.SubjectError"


def test_contract_errors(ready, subject, tmp_path):
    res = run_eval(ready, subject, tmp_path, func="train_wrong_type").result
    assert res["status"] == "exception" and res["type"] == "ReprolabContractError"
    assert "float" in res["message"] and '"search"' in res["message"]
    res = run_eval(ready, subject, tmp_path, func="train_missing_key").result
    assert res["type"] == "ReprolabContractError" and "'holdout'" in res["message"]
    res = run_eval(ready, subject, tmp_path, func="no_such_function").result
    assert res["type"] == "ReprolabContractError" and "no_such_function" in res["message"]


def test_non_finite_metrics(ready, subject, tmp_path):
    r = run_eval(ready, subject, tmp_path, func="train_nan")
    assert r.result == {"status": "ok", "search": None, "holdout": None, "extra": {}, "nonfinite": True}


def test_sys_exit_is_an_exception(ready, subject, tmp_path):
    r = run_eval(ready, subject, tmp_path, func="train_sys_exit")
    assert r.done["exit_code"] == 0
    assert r.result["status"] == "exception" and r.result["type"] == "SystemExit"


def test_memory_errors_are_oom(ready, subject, tmp_path):
    res = run_eval(ready, subject, tmp_path, func="train_memory_error").result
    assert res["status"] == "oom" and res["message"] == "no room"
    res = run_eval(ready, subject, tmp_path, func="train_big_alloc", memory_mb=3072).result
    assert res["status"] == "oom", res
    res = run_eval(ready, subject, tmp_path, func="train_big_tensor", memory_mb=3072).result
    assert res["status"] == "oom", res


def test_every_optimizer_steps(ready, subject, tmp_path):
    res = run_eval(ready, subject, tmp_path, func="train_optimizers").result
    assert res["status"] == "ok"
    names = ["sgd", "rmsprop", "adagrad", "adadelta", "adam", "adamax", "nadam"]
    assert res["extra"]["changed"] == {name: True for name in names}
    groups = res["extra"]["groups"]
    assert all(groups[name]["lr"] == 0.5 for name in names)
    # Keras defaults other than the learning rate
    assert groups["sgd"]["momentum"] == 0
    assert groups["rmsprop"]["alpha"] == 0.9 and groups["rmsprop"]["eps"] == 1e-7
    assert groups["rmsprop"]["momentum"] == 0 and groups["rmsprop"]["centered"] is False
    assert groups["adagrad"]["initial_accumulator_value"] == 0.1 and groups["adagrad"]["eps"] == 1e-7
    assert groups["adadelta"]["rho"] == 0.95 and groups["adadelta"]["eps"] == 1e-7
    for name in ("adam", "adamax", "nadam"):
        assert groups[name]["betas"] == [0.9, 0.999] and groups[name]["eps"] == 1e-7


def test_child_exit_and_signal_are_reported(ready, subject, tmp_path):
    r = run_eval(ready, subject, tmp_path, func="train_hard_exit")
    assert r.done["exit_code"] == 7 and r.done["signal"] is None
    assert not (r.workdir / "result.json").exists()
    r = run_eval(ready, subject, tmp_path, func="train_killed")
    assert r.done["exit_code"] is None and r.done["signal"] == signal.SIGKILL
    assert not (r.workdir / "result.json").exists()


def test_bad_requests_are_answered_and_skipped(ready, subject, tmp_path):
    ready.send("this is not json")
    ev = ready.event()
    assert ev["ev"] == "error" and "malformed" in ev["message"]
    ready.send({"op": "eval", "id": "bad1"})
    ev = ready.event()
    assert ev["ev"] == "error" and ev["id"] == "bad1" and "subject_dir" in ev["message"]
    ready.send({"op": "frobnicate"})
    assert ready.event()["ev"] == "error"
    # the worker still works
    assert run_eval(ready, subject, tmp_path).result["status"] == "ok"


KERAS_SUBJECT = textwrap.dedent('''
    import keras
    import numpy as np


    def train(config, seed):
        # no seeding and no reprolab call: the worker seeds Keras and attaches its callback
        x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(64, 2)
        y = (x[:, 0] > x[:, 1]).astype(np.float32)
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(1, activation="sigmoid")])
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        model.fit(x, y, epochs=config["epochs"], batch_size=16, verbose=0)
        acc = float(model.evaluate(x, y, verbose=0)[1])
        return {"search": acc, "holdout": acc, "kernel": model.layers[0].kernel.numpy().tolist()}
''')


@pytest.fixture(scope="module")
def keras_subject(tmp_path_factory):
    import importlib.util

    if importlib.util.find_spec("keras") is None:
        pytest.skip("Keras is not installed in this environment; the Keras worker test needs it")
    d = tmp_path_factory.mktemp("keras_subject")
    (d / "train.py").write_text(KERAS_SUBJECT)
    return d


def test_keras_subject_is_seeded_and_traced_without_its_help(ready, keras_subject, tmp_path):
    runs = [run_eval(ready, keras_subject, tmp_path, mode=mode, framework="keras")
            for mode in ("eval", "trace", "eval")]
    results = [r.result for r in runs]
    assert all(r["status"] == "ok" for r in results), results
    assert results[0]["extra"]["kernel"] == results[1]["extra"]["kernel"] == results[2]["extra"]["kernel"]
    assert [set(e) >= {"epoch", "loss", "acc", "nan"} for e in runs[0].epochs] == [True, True]
    traced = runs[1].epochs
    assert traced[0]["model"]["loss"] == "binary_crossentropy"
    assert [(l["kind"], l["act"]) for l in traced[1]["layers"]] == [("Dense", "relu"),
                                                                    ("Dense", "sigmoid")]
    assert all(l["grad_norm"] > 0 and l["weight_norm"] > 0 for l in traced[1]["layers"])


def test_a_torch_backend_keras_worker_holds_tensorflow_for_its_children(ready, keras_subject,
                                                                         tmp_path):
    """keras.utils.set_random_seed (the worker's and the program's) imports TensorFlow whenever
    it is installed, on the torch backend too: the worker holds it, so that a child does not
    import ~1,600 modules again for every training."""
    import importlib.util
    from pathlib import Path

    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed in this environment: there is nothing to hold")
    r = run_eval(ready, keras_subject, tmp_path, framework="keras")
    assert r.result["status"] == "ok", r.result
    maps = Path(f"/proc/{ready.proc.pid}/maps").read_text()
    assert "_pywrap_tensorflow" in maps or "libtensorflow" in maps

def test_unknown_backend_is_refused(ready, tmp_path):
    ready.send({"op": "eval", "id": "be", "subject_dir": str(tmp_path), "entry": "train.py:train",
                "workdir": str(tmp_path / "be"), "framework": "keras", "backend": "jax"})
    ev = ready.event()
    assert ev["ev"] == "error" and ev["id"] == "be" and "backend" in ev["message"]


def test_keras_on_tensorflow_in_a_worker_of_its_own(keras_subject, tmp_path):
    """A worker imports Keras on the first Keras request's backend; its children run TensorFlow
    on one thread, seeded; a request for the other backend makes it exit (its driver starts a
    fresh worker for it)."""
    import importlib.util

    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed in this environment (`reprolab env --tensorflow`)")
    w = Worker(tmp_path)
    try:
        assert w.wait_ready()["ev"] == "ready"
        runs = [run_eval(w, keras_subject, tmp_path, mode=mode, framework="keras",
                         backend="tensorflow") for mode in ("eval", "trace", "eval")]
        results = [r.result for r in runs]
        assert all(r["status"] == "ok" for r in results), [r.output for r in runs]
        kernels = [r["extra"]["kernel"] for r in results]
        assert kernels[0] == kernels[1] == kernels[2]
        assert all(l["grad_norm"] > 0 for l in runs[1].epochs[1]["layers"])
        w.send({"op": "eval", "id": "other", "subject_dir": str(keras_subject),
                "entry": "train.py:train", "workdir": str(tmp_path / "other"),
                "framework": "keras", "backend": "torch"})
        ev = w.event()
        assert ev["ev"] == "error" and ev["fatal"] and ev["id"] == "other", ev
        assert w.proc.wait(timeout=30) == 3
    finally:
        w.close()


def test_unknown_framework_is_refused(ready, tmp_path):
    ready.send({"op": "eval", "id": "fw", "subject_dir": str(tmp_path), "entry": "train.py:train",
                "workdir": str(tmp_path / "fw"), "framework": "jax"})
    ev = ready.event()
    assert ev["ev"] == "error" and ev["id"] == "fw" and "framework" in ev["message"]


def run_curve(worker, subject, tmp_path, curve, prune, mode="eval"):
    return run_eval(worker, subject, tmp_path, func="train_curve", mode=mode,
                    config={"curve": curve}, prune=prune)


def test_a_training_behind_its_threshold_ends_pruned_at_that_epoch(ready, subject, tmp_path):
    spec = {"key": "val_acc", "goal": "max", "thresholds": [None, 0.5, 0.7, 0.8]}
    # Best so far 0.6 >= 0.5 at epoch 1, 0.6 < 0.7 at epoch 2: pruned there, after logging it.
    r = run_curve(ready, subject, tmp_path, [0.2, 0.6, 0.4, 0.9, 0.95], spec)
    assert r.done["exit_code"] == 0
    assert r.result == {"status": "pruned", "epoch": 2, "value": 0.6}
    assert [e["epoch"] for e in r.epochs] == [0, 1, 2]
    # Ahead of every threshold (the best so far counts): it runs to its end.
    r = run_curve(ready, subject, tmp_path, [0.9, 0.1, 0.1, 0.1, 0.3], spec)
    assert r.result["status"] == "ok" and r.result["extra"]["epochs_run"] == 5
    # Past the last threshold nothing is checked.
    r = run_curve(ready, subject, tmp_path, [0.9, 0.9, 0.9, 0.9, 0.0], spec)
    assert r.result["status"] == "ok"
    # Goal min: above the threshold is behind.
    low = {"key": "val_acc", "goal": "min", "thresholds": [0.5]}
    assert run_curve(ready, subject, tmp_path, [0.6, 0.1], low).result == {
        "status": "pruned", "epoch": 0, "value": 0.6}
    # No finite value yet at a checked epoch: pruned with value null.
    r = run_curve(ready, subject, tmp_path, [None, None], {**spec, "thresholds": [None, 0.1]})
    assert r.result == {"status": "pruned", "epoch": 1, "value": None}
    # A key the training does not log is never checked; no spec, or a trace, never prunes.
    r = run_curve(ready, subject, tmp_path, [0.0, 0.0], {**spec, "key": "val_mse"})
    assert r.result["status"] == "ok"
    assert run_curve(ready, subject, tmp_path, [0.0, 0.0], None).result["status"] == "ok"
    assert run_curve(ready, subject, tmp_path, [0.0, 0.0], spec, mode="trace").result["status"] == "ok"


def test_a_malformed_prune_spec_is_refused(ready, subject, tmp_path):
    ready.send({"op": "eval", "id": "badprune", "subject_dir": str(subject),
                "entry": "train.py:train_curve", "config": {"curve": [0.1]}, "seed": 1,
                "mode": "eval", "workdir": str(tmp_path / "bp"), "prune": [0.5]})
    ev = ready.event()
    assert ev["ev"] == "error" and "prune" in ev["message"]


def test_shutdown(ready):
    ready.send({"op": "shutdown"})
    assert ready.proc.wait(timeout=60) == 0
