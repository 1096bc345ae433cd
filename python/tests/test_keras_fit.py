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
    assert model["backend"] == keras.backend.backend()
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


# --- data that is not an array: a Python generator, a keras.utils.PyDataset, a tf.data pipeline --
_ROWS, _BATCH = 96, 16


def _data():
    rng = np.random.default_rng(1)
    x = rng.random((_ROWS, 6), dtype=np.float32)
    return x, keras.utils.to_categorical((x.sum(axis=1) > 3).astype(int), 2)


def _batches():
    """A generator of (x, y) batches that never ends, as Keras users write one for fit (with
    steps_per_epoch)."""
    x, y = _data()
    while True:
        for i in range(0, _ROWS, _BATCH):
            yield x[i:i + _BATCH], y[i:i + _BATCH]


class _Batches(keras.utils.PyDataset):
    """The same batches as a PyDataset (Keras may shuffle their order)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y = _data()

    def __len__(self):
        return _ROWS // _BATCH

    def __getitem__(self, i):
        return self.x[i * _BATCH:(i + 1) * _BATCH], self.y[i * _BATCH:(i + 1) * _BATCH]


def _tf_dataset():
    tf = pytest.importorskip("tensorflow", reason="tf.data needs TensorFlow "
                             "(`reprolab env --tensorflow`)")
    return tf.data.Dataset.from_tensor_slices(_data()).batch(_BATCH)


# name -> fit's keyword arguments (built afresh for each training)
_INPUTS = {
    "generator": lambda: {"x": _batches(), "steps_per_epoch": _ROWS // _BATCH},
    "pydataset": lambda: {"x": _Batches(), "validation_data": _Batches()},
    "tf.data": lambda: {"x": _tf_dataset()},
}


def _fit_records(ctx, tmp_path, mode, inputs):
    """Train a small model on `inputs` for 3 epochs under reprolab's callback; its records and
    predictions."""
    path = tmp_path / "epochs.jsonl"
    if path.exists():
        path.unlink()
    ctx(mode)
    kwargs = _INPUTS[inputs]()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    with keras_fit.patched_fit(mode):
        model.fit(epochs=3, verbose=0, **kwargs)
    return _records(path), model.predict(_data()[0], verbose=0)


@pytest.mark.parametrize("inputs", list(_INPUTS))
def test_fit_on_batches_that_are_not_arrays_is_recorded_and_traced(run_context, tmp_path, inputs):
    evaluated, pred_eval = _fit_records(run_context, tmp_path, "eval", inputs)
    traced, pred_trace = _fit_records(run_context, tmp_path, "trace", inputs)
    assert [r["epoch"] for r in evaluated] == [0, 1, 2]
    for r in evaluated:
        assert np.isfinite(r["loss"]) and 0 <= r["acc"] <= 1 and r["nan"] is False, r
        assert "layers" not in r and "steps" not in r
    if inputs == "pydataset":
        assert all(np.isfinite(r["val_loss"]) and "val_acc" in r for r in evaluated)
    # A trace trains the model an evaluation trains, records the same metrics, and counts every
    # batch of an epoch as one update (validation batches are not updates).
    np.testing.assert_array_equal(pred_eval, pred_trace)
    assert [r["loss"] for r in traced] == [r["loss"] for r in evaluated]
    assert [r["steps"] for r in traced] == [_ROWS // _BATCH] * 3
    assert traced[0]["model"]["backend"] == keras.backend.backend()
    assert [l["kind"] for l in traced[0]["model"]["layers"]] == ["Dense", "Dense"]
    for r in traced:
        assert r["nan"] is False
        # no array to take a fixed batch from: weight norms, but no gradients nor activations
        assert [l["kind"] for l in r["layers"]] == ["Dense", "Dense"]
        for l in r["layers"]:
            assert l["weight_norm"] > 0 and l["grad_norm"] is None, l
            assert l["mean_abs_out"] is None, l
