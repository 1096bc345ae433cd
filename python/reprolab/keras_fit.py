"""Keras 3 subjects: what reprolab attaches to `model.fit` so that users need not.

The worker child calls `patched_fit(mode)` around a Keras subject's `train(config, seed)`. While
it is active every `keras.Model.fit` call gets one more callback, `ReprolabCallback`, which

* at each epoch's end calls `reprolab.log_epoch(epoch, loss=..., acc=..., val_loss=...,
  val_acc=...)` with Keras' logs (`accuracy` / `val_accuracy` become `acc` / `val_acc`, every other
  key is passed through under its own name);
* in trace mode measures, at each epoch's start, one batch (the first `batch_size` rows of the
  `x` / `y` given to fit: a fixed batch, as Keras shuffles its own): the per-layer gradient of the
  compiled loss (by the backend's own means: reprolab.keras_torch, reprolab.keras_tensorflow;
  without touching what the optimizer reads) and the activation statistics of that batch's training-mode forward pass; at the epoch's end the
  `layers` list of the trace record (docs/architecture.md, "Trace record") with weight norms and
  a check for non-finite weights. The first record of each fit also carries `model`: the
  architecture (layer types, units, activations, initialisers, loss, optimizer) in Keras' names.

The measuring pass leaves training as it was: it restores every non-trainable variable (batch-norm
statistics, dropout seed states), metric variable and the backend's global random state
(torch's, used by unseeded dropout) it may have moved, so a trace trains the same model as an
evaluation with the same seed. With data that is not an array (a dataset, a generator) there is no
batch to measure: gradients and activations are null, weight norms stay.

Statistics are computed in numpy from the backend's tensors, so everything but the gradient
itself is the same code on every backend.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import math

import keras
import numpy as np

import reprolab
from reprolab.trace import _SATURATION

# What differs between backends (gradients, global random state), chosen once: Keras' backend is
# fixed at its import. reprolab.keras_torch or reprolab.keras_tensorflow.
_backend = importlib.import_module(f"reprolab.keras_{keras.backend.backend()}")

# Keras' log names -> the names reprolab's records (and the monitors) use.
_RENAMED = {"accuracy": "acc", "val_accuracy": "val_acc"}

# Activation layers that are classes of their own (no `activation` attribute to wrap).
_ACTIVATION_LAYERS = {"ReLU": "relu", "Softmax": "softmax", "LeakyReLU": "leaky_relu",
                      "ELU": "elu", "PReLU": "prelu"}


@contextlib.contextmanager
def patched_fit(mode):
    """While active, every `keras.Model.fit` call also runs a `ReprolabCallback`."""
    original = keras.Model.fit
    own = "fit" in vars(keras.Model)  # else fit is the backend trainer's, inherited
    signature = inspect.signature(original)

    def fit(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        arguments = bound.arguments
        callbacks = list(arguments.get("callbacks") or [])
        callbacks.append(ReprolabCallback(mode == "trace", _probe_batch(arguments)))
        arguments["callbacks"] = callbacks
        return original(*bound.args, **bound.kwargs)

    fit.__doc__ = original.__doc__
    keras.Model.fit = fit
    try:
        yield
    finally:
        if own:
            keras.Model.fit = original
        else:
            del keras.Model.fit


def _probe_batch(arguments):
    """(x, y) of the first `batch_size` rows of fit's arrays, or None when `x` is not an array
    (a dataset or generator carries its own batches, which reprolab does not consume)."""
    x, y = arguments.get("x"), arguments.get("y")
    if not _is_array(x) or (y is not None and not _is_array(y)):
        return None
    n = arguments.get("batch_size") or 32
    return x[:n], (None if y is None else y[:n])


def _is_array(a):
    return (isinstance(a, np.ndarray) or keras.ops.is_tensor(a)) and a.ndim >= 1


class ReprolabCallback(keras.callbacks.Callback):
    """Per-epoch records for reprolab (see the module docstring)."""

    def __init__(self, trace, batch):
        super().__init__()
        self.trace = trace
        self.batch = batch
        self.tracer = None
        self.first = True

    def on_train_begin(self, logs=None):
        ctx = reprolab._context
        if self.trace and ctx is not None:
            self.tracer = KerasTracer(self.model)
            ctx.tracer = self.tracer

    def on_train_batch_end(self, batch, logs=None):
        if self.tracer is not None:
            self.tracer.steps += 1

    def on_epoch_begin(self, epoch, logs=None):
        if self.tracer is not None and self.batch is not None:
            self.tracer.measure(*self.batch)

    def on_epoch_end(self, epoch, logs=None):
        metrics = {_RENAMED.get(k, k): v for k, v in (logs or {}).items()}
        if self.tracer is not None and self.first:
            metrics["model"] = architecture(self.model)
        self.first = False
        reprolab.log_epoch(epoch, **metrics)

    def on_train_end(self, logs=None):
        ctx = reprolab._context
        if ctx is not None and ctx.tracer is self.tracer:
            ctx.tracer = None


# --- architecture ------------------------------------------------------------------------------
def architecture(model):
    """Layer types, units, activations and initialisers from `model.layers`; loss and optimizer
    from `model.compile`, all in Keras' own names (the study's vocabulary); and the backend Keras
    trained it on ("torch" or "tensorflow")."""
    layers = []
    for layer in _leaf_layers(model):
        entry = {"name": layer.name, "kind": type(layer).__name__}
        for attr in ("units", "filters", "kernel_size", "rate"):
            value = getattr(layer, attr, None)
            if value is not None:
                entry[attr] = list(value) if isinstance(value, tuple) else value
        act = _activation_name(getattr(layer, "activation", None))
        if act is not None:
            entry["activation"] = act
        for attr in ("kernel_initializer", "bias_initializer"):
            init = getattr(layer, attr, None)
            if init is not None:
                entry[attr] = _initializer_name(init)
        layers.append(entry)
    optimizer = getattr(model, "optimizer", None)
    return {
        "backend": keras.backend.backend(),
        "layers": layers,
        "loss": _loss_name(getattr(model, "loss", None)),
        "optimizer": None if optimizer is None else _snake(type(optimizer).__name__),
        "learning_rate": None if optimizer is None else reprolab._to_float(
            _variable_value(optimizer.learning_rate)),
    }


def _leaf_layers(model):
    """The model's layers with nested models flattened, in order."""
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            yield from _leaf_layers(layer)
        else:
            yield layer


def _activation_name(fn):
    """Keras' name of an activation function ('relu', 'softmax', 'linear', ...), or None."""
    if fn is None:
        return None
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return _snake(name)


def _initializer_name(init):
    """'glorot_uniform' for keras.initializers.GlorotUniform(), the string for a string."""
    if isinstance(init, str):
        return init
    return _snake(type(init).__name__)


def _loss_name(loss):
    if loss is None or isinstance(loss, str):
        return loss
    name = getattr(loss, "name", None) or getattr(loss, "__name__", None) or type(loss).__name__
    return _snake(name)


def _snake(name):
    """CamelCase -> snake_case ('GlorotUniform' -> 'glorot_uniform', 'SGD' -> 'sgd')."""
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i and (name[i - 1].islower() or
                                  (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(c.lower())
    return "".join(out)


def _variable_value(v):
    return getattr(v, "value", v)


def _numpy(x):
    """A backend tensor or variable as a numpy array (detached from any gradient tape)."""
    return _backend.to_numpy(_variable_value(x))


def _sum_squares(a):
    return float(np.sum(np.square(a, dtype=np.float64)))


# --- trace ---------------------------------------------------------------------------------------
def _f(x):
    """float or None (non-finite / missing)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


class _Probe:
    """One traced layer: where its activation is observed and what the last measurement saw."""

    def __init__(self, layer, act_name, target, attr):
        self.layer = layer
        self.act_name = act_name
        self.target = target  # the layer whose `attr` is wrapped to observe (input, output)
        self.attr = attr
        self.stats = {}
        self.grad = None  # (sum of squares, zeros, numel)

    def observe(self, inp, out):
        """Activation statistics of one forward pass (the first call only)."""
        if self.stats or not keras.ops.is_tensor(out):
            return
        o = _numpy(out)
        if not np.issubdtype(o.dtype, np.floating) or not o.size:
            return
        self.stats["mean_abs_out"] = float(np.abs(o).mean())
        if self.act_name is None:
            return
        units = o.reshape(-1, o.shape[-1]) if o.ndim >= 2 else o.reshape(-1, 1)
        if getattr(self.layer, "data_format", None) == "channels_first" and o.ndim > 2:
            units = np.moveaxis(o, 1, -1).reshape(-1, o.shape[1])
        self.stats["dead_frac"] = float((units <= 0).all(axis=0).mean())
        threshold = _SATURATION.get(self.act_name)
        if threshold is None or not keras.ops.is_tensor(inp):
            self.stats["saturated_frac"] = 0.0
        else:
            x = np.abs(_numpy(inp))
            sat = (x >= threshold) if self.act_name == "hard_sigmoid" else (x > threshold)
            self.stats["saturated_frac"] = float(sat.mean())

    def record(self):
        layer = self.layer
        # the weight a torch layer calls `weight`, as the PyTorch tracer measures it
        main = [w for w in (getattr(layer, a, None) for a in ("kernel", "gamma")) if w is not None]
        tensors = main[:1] or layer.weights
        sumsq = sum(_sum_squares(_numpy(v)) for v in tensors)
        grad_norm = grad_zero_frac = None
        if self.grad is not None and self.grad[2]:
            grad_norm = math.sqrt(self.grad[0]) if math.isfinite(self.grad[0]) else None
            grad_zero_frac = self.grad[1] / self.grad[2]
        return {
            "name": layer.name,
            "kind": type(layer).__name__,
            "weight_norm": _f(math.sqrt(sumsq)) if math.isfinite(sumsq) else None,
            "grad_norm": _f(grad_norm),
            "grad_zero_frac": _f(grad_zero_frac),
            "act": self.act_name,
            "dead_frac": _f(self.stats.get("dead_frac")),
            "saturated_frac": _f(self.stats.get("saturated_frac")),
            "mean_abs_out": _f(self.stats.get("mean_abs_out")),
        }


def _pair_probes(model):
    """A probe per layer with weights, paired with its activation: its own `activation` unless
    that is linear and an activation layer follows before the next layer with weights (as the
    PyTorch tracer pairs a Linear with the activation module after it)."""
    probes, pending = [], None
    for layer in _leaf_layers(model):
        if layer.weights:
            pending = None
            fused = getattr(layer, "activation", None)
            if callable(fused):
                probe = _Probe(layer, _activation_name(fused), layer, "activation")
                pending = probe if probe.act_name == "linear" else None
            else:
                probe = _Probe(layer, None, layer, "call")
                pending = probe
            probes.append(probe)
        elif pending is not None and _standalone_activation(layer) is not None:
            pending.act_name, pending.target, pending.attr = _standalone_activation(layer)
            pending = None
    return probes


def _standalone_activation(layer):
    """(name, layer, attribute to wrap) for an activation layer without weights, else None."""
    if type(layer).__name__ == "Activation":
        return _activation_name(layer.activation), layer, "activation"
    name = _ACTIVATION_LAYERS.get(type(layer).__name__)
    return None if name is None else (name, layer, "call")


@contextlib.contextmanager
def _observing(probes):
    """Wrap each probe's activation (or call) on its layer instance, so one forward pass reports
    (input, output) to the probe; the class attributes are back afterwards."""
    wrapped = []
    try:
        for probe in probes:
            original = getattr(probe.target, probe.attr)

            def spy(*args, _original=original, _probe=probe, **kwargs):
                out = _original(*args, **kwargs)
                _probe.observe(args[0] if args else None, out)
                return out

            object.__setattr__(probe.target, probe.attr, spy)
            wrapped.append((probe.target, probe.attr, original))
        yield
    finally:
        for target, attr, original in reversed(wrapped):
            if attr == "call":
                object.__delattr__(target, attr)  # the class's method again
            else:
                object.__setattr__(target, attr, original)


class KerasTracer:
    """The tracer `reprolab.log_epoch` asks for the `layers` list (same interface as
    reprolab.trace.Tracer: `epoch_layers()` and `arm()`)."""

    def __init__(self, model):
        self.model = model
        self._probes = None
        self.steps = 0  # training batches since the last epoch record (the callback counts them)

    def epoch_steps(self):
        """Training batches (optimizer updates) since the last call."""
        steps, self.steps = self.steps, 0
        return steps

    @property
    def probes(self):
        # Paired on first use: a model without an Input is built by fit, after on_train_begin.
        if self._probes is None:
            self._probes = _pair_probes(self.model)
        return self._probes

    def measure(self, x, y):
        """Gradients and activations of one training-mode pass over (x, y), state restored."""
        model = self.model
        state = _stateful_variables(model)
        saved = [_numpy(v) for v in state]
        per_probe = [[_variable_value(v) for v in p.layer.trainable_weights] for p in self.probes]
        flat = [t for ts in per_probe for t in ts]

        def loss():
            xb = keras.ops.convert_to_tensor(x)
            yb = None if y is None else keras.ops.convert_to_tensor(y)
            y_pred = model(xb, training=True)
            return model.compute_loss(x=xb, y=yb, y_pred=y_pred)

        try:
            with _backend.random_state_kept(), _observing(self.probes):
                grads = _backend.gradients(loss, flat)
        finally:
            for v, value in zip(state, saved):
                v.assign(value)
        if grads is None:
            return
        grads = iter(grads)
        for probe, tensors in zip(self.probes, per_probe):
            sumsq, zeros, numel = 0.0, 0, 0
            for g in (next(grads) for _ in tensors):
                if g is None:
                    continue
                g = _numpy(g)
                sumsq += _sum_squares(g)
                zeros += int(np.count_nonzero(g == 0))
                numel += g.size
            probe.grad = (sumsq, zeros, numel)

    def epoch_layers(self):
        """(layers records, any weight non-finite) for the epoch that just ended."""
        values = (_numpy(v) for v in self.model.weights)
        nonfinite = any(not np.isfinite(a).all() for a in values
                        if np.issubdtype(a.dtype, np.floating))
        return [p.record() for p in self.probes], nonfinite

    def arm(self):
        """Forget this epoch's measurements (called by log_epoch after recording)."""
        for probe in self.probes:
            probe.stats = {}
            probe.grad = None


def _stateful_variables(model):
    """Variables a training-mode pass may move besides the weights: batch-norm statistics, seed
    generator states (dropout) and metrics."""
    seen, out = set(), []
    for v in list(model.non_trainable_variables) + list(model.metrics_variables):
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out
