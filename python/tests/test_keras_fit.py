"""reprolab.keras_fit in process: the callback reprolab attaches to a Keras 3 model.fit. On the
backend KERAS_BACKEND names (torch by default; test_keras_fit_tensorflow.py runs this file again
on TensorFlow)."""
import json
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")  # read once, at Keras' first import
keras = pytest.importorskip("keras", reason="Keras 3 is not installed in this environment")
if keras.backend.backend() not in ("torch", "tensorflow"):
    pytest.skip(f"Keras runs on {keras.backend.backend()!r}; reprolab traces Keras on torch and "
                "tensorflow", allow_module_level=True)

import numpy as np  # noqa: E402

from reprolab import keras_fit  # noqa: E402


def _train(seed=0, epochs=2):
    """A small model with every kind of layer the tracer pairs: fused and standalone activations,
    batch normalisation and (unseeded) dropout, whose state a trace must not move."""
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(0)
    x = rng.random((96, 6), dtype=np.float32)
    y = keras.utils.to_categorical((x.sum(axis=1) > 3).astype(int), 2)
    model = keras.Sequential([
        keras.Input((6,)),
        keras.layers.Dense(8, activation="tanh"),
        keras.layers.Dense(8),
        keras.layers.BatchNormalization(),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(8),
        keras.layers.ReLU(),
        keras.layers.Dense(2, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    own = keras.callbacks.History()
    model.fit(x, y, 16, epochs, 0, [own])  # callbacks passed positionally, as fit allows
    assert own.history, "the user's own callback still runs"
    return model.predict(x, verbose=0)


def _records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _run(ctx, mode):
    d = ctx(mode)
    with keras_fit.patched_fit(mode):
        pred = _train()
    return pred, _records(d / "epochs.jsonl")


def test_eval_logs_keras_metrics_under_reprolab_names(run_context):
    before = dict(vars(keras.Model))
    _, records = _run(run_context, "eval")
    assert dict(vars(keras.Model)) == before, "fit is patched only while the context is active"
    assert [r["epoch"] for r in records] == [0, 1]
    for r in records:
        assert {"loss", "acc"} <= r.keys() and "accuracy" not in r and r["nan"] is False
        assert "layers" not in r and "model" not in r


def test_trace_records_layers_and_architecture_without_changing_training(run_context, tmp_path):
    pred_eval, _ = _run(run_context, "eval")
    (tmp_path / "epochs.jsonl").unlink()
    pred_trace, records = _run(run_context, "trace")
    np.testing.assert_array_equal(pred_eval, pred_trace)

    model = records[0]["model"]
    assert model["loss"] == "categorical_crossentropy" and model["optimizer"] == "adam"
    assert model["layers"][0] == {"name": model["layers"][0]["name"], "kind": "Dense", "units": 8,
                                  "activation": "tanh", "kernel_initializer": "glorot_uniform",
                                  "bias_initializer": "zeros"}
    assert "model" not in records[1]
    # every batch of fit is one update: 96 rows in batches of 16
    assert [r["steps"] for r in records] == [6, 6]
    layers = records[1]["layers"]
    assert [(l["kind"], l["act"]) for l in layers] == [
        ("Dense", "tanh"), ("Dense", "linear"), ("BatchNormalization", None), ("Dense", "relu"),
        ("Dense", "softmax")]
    for l in layers:
        assert l["weight_norm"] > 0 and l["grad_norm"] > 0, l
        assert 0 <= l["grad_zero_frac"] <= 1 and l["mean_abs_out"] > 0, l
    assert layers[0]["saturated_frac"] is not None and layers[3]["dead_frac"] is not None
