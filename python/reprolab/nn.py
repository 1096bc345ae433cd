"""The study's Keras vocabulary on PyTorch, with Keras semantics.

    activation(name) -> torch.nn.Module
    init_layer(layer, kernel_init, bias_init)
    loss(name) -> callable(y_pred_after_activation, y_true) -> scalar tensor (mean over the batch)
    optimizer(name, params, lr) -> torch.optim.Optimizer

plus the value lists ACTIVATIONS, INITIALIZERS, LOSSES, OPTIMIZERS and BATCH_SIZES.

Notes on the Keras semantics reproduced here:

* Losses take the model output *after* its final activation, as Keras losses do. The
  cross-entropies normalise probabilities over the last axis (categorical ones, as Keras does) and
  clip them to [1e-7, 1 - 1e-7], so that faults such as sigmoid + categorical_crossentropy or
  softmax + mean_squared_error behave as in Keras. y_true is a float tensor: one-hot (n, C) for
  multi-class, (n, 1) for binary, the values for regression. sparse_categorical_crossentropy also
  accepts that one-hot tensor (it takes the argmax) or integer labels. hinge and squared_hinge turn
  0/1 labels into -1/1, as Keras does.
* Initialisers use Keras' default parameters (random_normal std 0.05, random_uniform +-0.05,
  truncated_normal std 0.05 cut at 2 std, constant 0, variance-scaling ones with Keras' truncated
  normal correction). Fans are those Keras computes for the same layer: a torch Linear weight is
  (out, in) where the Keras kernel is (in, out), a Conv weight (out, in, *k) where Keras has
  (*k, in, out); fan_in/fan_out agree. A 1-D tensor (a bias) has fan_in = fan_out = its length and,
  as in Keras, cannot be initialised orthogonally.
* Optimisers use Keras' default hyperparameters other than the learning rate (tf.keras 2
  formulas, which torch's implementations match): rmsprop rho 0.9 eps 1e-7; adagrad initial
  accumulator 0.1 eps 1e-7; adadelta rho 0.95 eps 1e-7; adam/adamax/nadam betas (0.9, 0.999)
  eps 1e-7; sgd without momentum.
* hard_sigmoid is Keras 3's relu6(x + 3) / 6 (torch.nn.Hardsigmoid).
"""
from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "ACTIVATIONS",
    "INITIALIZERS",
    "LOSSES",
    "OPTIMIZERS",
    "BATCH_SIZES",
    "EPSILON",
    "activation",
    "init_layer",
    "initialize",
    "loss",
    "optimizer",
    "Identity",
    "Exponential",
]

EPSILON = 1e-7

ACTIVATIONS = ["elu", "softmax", "selu", "softplus", "softsign", "relu", "tanh", "sigmoid",
               "hard_sigmoid", "exponential", "linear"]
INITIALIZERS = ["zeros", "ones", "constant", "random_normal", "random_uniform", "truncated_normal",
                "orthogonal", "lecun_uniform", "glorot_normal", "glorot_uniform", "he_normal",
                "lecun_normal", "he_uniform"]
LOSSES = ["mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
          "mean_squared_logarithmic_error", "squared_hinge", "hinge", "categorical_hinge", "logcosh",
          "categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy",
          "kullback_leibler_divergence", "poisson"]
OPTIMIZERS = ["sgd", "rmsprop", "adagrad", "adadelta", "adam", "adamax", "nadam"]
BATCH_SIZES = [16, 32, 64, 128, 256, 512]


def _norm(name):
    return str(name).strip().lower()


def _unknown(what, name, valid):
    return ValueError(f"unknown {what} {name!r}; valid: {', '.join(valid)}")


# --------------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------------
class Identity(nn.Module):
    """Keras' 'linear' activation: f(x) = x. (Distinct from torch.nn.Linear, the dense layer.)"""

    def forward(self, x):
        return x


class Exponential(nn.Module):
    """Keras' 'exponential' activation: f(x) = exp(x)."""

    def forward(self, x):
        return torch.exp(x)


_ACTIVATION_FACTORIES = {
    "elu": lambda: nn.ELU(alpha=1.0),
    "softmax": lambda: nn.Softmax(dim=-1),
    "selu": nn.SELU,
    "softplus": nn.Softplus,
    "softsign": nn.Softsign,
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "hard_sigmoid": nn.Hardsigmoid,  # relu6(x + 3) / 6, Keras 3's definition
    "exponential": Exponential,
    "linear": Identity,
}


def activation(name) -> nn.Module:
    """A fresh torch module computing Keras' activation `name`."""
    key = _norm(name)
    if key not in _ACTIVATION_FACTORIES:
        raise _unknown("activation", name, ACTIVATIONS)
    return _ACTIVATION_FACTORIES[key]()


# --------------------------------------------------------------------------------------------
# Initialisers
# --------------------------------------------------------------------------------------------
_TRUNC_CORRECTION = 0.87962566103423978  # std of a unit normal truncated to [-2, 2]


def _fans(shape):
    """fan_in, fan_out as Keras computes them for the equivalent Keras kernel."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:  # torch (out, in) == Keras (in, out)
        return shape[1], shape[0]
    receptive = math.prod(shape[2:])  # torch (out, in, *k) == Keras (*k, in, out)
    return shape[1] * receptive, shape[0] * receptive


def _trunc_normal(t, std):
    return nn.init.trunc_normal_(t, mean=0.0, std=std, a=-2.0 * std, b=2.0 * std)


def _variance_scaling(t, scale, mode, distribution):
    fan_in, fan_out = _fans(tuple(t.shape))
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[mode]
    n = max(1.0, float(n))
    if distribution == "truncated_normal":
        return _trunc_normal(t, math.sqrt(scale / n) / _TRUNC_CORRECTION)
    limit = math.sqrt(3.0 * scale / n)
    return nn.init.uniform_(t, -limit, limit)


def _orthogonal(t):
    if t.dim() < 2:
        raise ValueError("the 'orthogonal' initializer needs a tensor of at least two dimensions "
                         f"(got shape {tuple(t.shape)}); as in Keras, it cannot initialise a bias")
    return nn.init.orthogonal_(t, gain=1.0)


_INITIALIZER_FNS = {
    "zeros": nn.init.zeros_,
    "ones": nn.init.ones_,
    "constant": lambda t: nn.init.constant_(t, 0.0),  # Keras Constant(value=0)
    "random_normal": lambda t: nn.init.normal_(t, mean=0.0, std=0.05),
    "random_uniform": lambda t: nn.init.uniform_(t, -0.05, 0.05),
    "truncated_normal": lambda t: _trunc_normal(t, 0.05),
    "orthogonal": _orthogonal,
    "lecun_uniform": lambda t: _variance_scaling(t, 1.0, "fan_in", "uniform"),
    "glorot_normal": lambda t: _variance_scaling(t, 1.0, "fan_avg", "truncated_normal"),
    "glorot_uniform": lambda t: _variance_scaling(t, 1.0, "fan_avg", "uniform"),
    "he_normal": lambda t: _variance_scaling(t, 2.0, "fan_in", "truncated_normal"),
    "lecun_normal": lambda t: _variance_scaling(t, 1.0, "fan_in", "truncated_normal"),
    "he_uniform": lambda t: _variance_scaling(t, 2.0, "fan_in", "uniform"),
}


def initialize(tensor, name):
    """Fill `tensor` in place with Keras' initializer `name`; returns the tensor."""
    key = _norm(name)
    if key not in _INITIALIZER_FNS:
        raise _unknown("initializer", name, INITIALIZERS)
    with torch.no_grad():
        return _INITIALIZER_FNS[key](tensor)


def init_layer(layer, kernel_init, bias_init):
    """Initialise `layer.weight` with `kernel_init` and `layer.bias` (when present) with
    `bias_init`, Keras' names and defaults. Returns the layer."""
    k, b = _norm(kernel_init), _norm(bias_init)
    if k not in _INITIALIZER_FNS:
        raise _unknown("initializer", kernel_init, INITIALIZERS)
    if b not in _INITIALIZER_FNS:
        raise _unknown("initializer", bias_init, INITIALIZERS)
    weight = getattr(layer, "weight", None)
    bias = getattr(layer, "bias", None)
    if weight is None and bias is None:
        raise ValueError(f"init_layer: {type(layer).__name__} has neither a weight nor a bias")
    if weight is not None:
        initialize(weight, k)
    if bias is not None:
        initialize(bias, b)
    return layer


# --------------------------------------------------------------------------------------------
# Losses: Keras formulas, on y_pred after the final activation; mean over the batch.
# --------------------------------------------------------------------------------------------
def _prep(y_pred, y_true):
    if not torch.is_tensor(y_true):
        y_true = torch.as_tensor(y_true)
    y_true = y_true.to(device=y_pred.device, dtype=y_pred.dtype if y_pred.is_floating_point() else torch.float32)
    if not y_pred.is_floating_point():
        y_pred = y_pred.float()
    if y_pred.dim() == 0:
        y_pred = y_pred.reshape(1, 1)
    elif y_pred.dim() == 1:
        y_pred = y_pred.unsqueeze(-1)
    if y_true.shape != y_pred.shape and y_true.numel() == y_pred.numel():
        y_true = y_true.reshape(y_pred.shape)
    return y_pred, y_true


def _clip_prob(p):
    return torch.clamp(p, EPSILON, 1.0 - EPSILON)


def _maybe_convert_labels(y_true):
    """Keras' hinge losses: 0/1 labels become -1/1."""
    if bool(((y_true == 0) | (y_true == 1)).all()):
        return 2.0 * y_true - 1.0
    return y_true


def _mse(y_pred, y_true):
    return torch.square(y_pred - y_true).mean(dim=-1)


def _mae(y_pred, y_true):
    return torch.abs(y_pred - y_true).mean(dim=-1)


def _mape(y_pred, y_true):
    diff = torch.abs((y_true - y_pred) / torch.clamp(torch.abs(y_true), min=EPSILON))
    return 100.0 * diff.mean(dim=-1)


def _msle(y_pred, y_true):
    first = torch.log(torch.clamp(y_pred, min=EPSILON) + 1.0)
    second = torch.log(torch.clamp(y_true, min=EPSILON) + 1.0)
    return torch.square(first - second).mean(dim=-1)


def _squared_hinge(y_pred, y_true):
    y_true = _maybe_convert_labels(y_true)
    return torch.square(torch.clamp(1.0 - y_true * y_pred, min=0.0)).mean(dim=-1)


def _hinge(y_pred, y_true):
    y_true = _maybe_convert_labels(y_true)
    return torch.clamp(1.0 - y_true * y_pred, min=0.0).mean(dim=-1)


def _categorical_hinge(y_pred, y_true):
    pos = (y_true * y_pred).sum(dim=-1)
    neg = ((1.0 - y_true) * y_pred).max(dim=-1).values
    return torch.clamp(neg - pos + 1.0, min=0.0)


def _logcosh(y_pred, y_true):
    x = y_pred - y_true
    return (x + nn.functional.softplus(-2.0 * x) - math.log(2.0)).mean(dim=-1)


def _normalise_probs(y_pred):
    return _clip_prob(y_pred / y_pred.sum(dim=-1, keepdim=True))


def _categorical_crossentropy(y_pred, y_true):
    return -(y_true * torch.log(_normalise_probs(y_pred))).sum(dim=-1)


def _binary_crossentropy(y_pred, y_true):
    p = _clip_prob(y_pred)
    return -(y_true * torch.log(p) + (1.0 - y_true) * torch.log(1.0 - p)).mean(dim=-1)


def _kld(y_pred, y_true):
    t = torch.clamp(y_true, EPSILON, 1.0)
    p = torch.clamp(y_pred, EPSILON, 1.0)
    return (t * torch.log(t / p)).sum(dim=-1)


def _poisson(y_pred, y_true):
    return (y_pred - y_true * torch.log(y_pred + EPSILON)).mean(dim=-1)


def _sparse_categorical_crossentropy(y_pred, y_true):
    if not torch.is_tensor(y_true):
        y_true = torch.as_tensor(y_true)
    if not y_pred.is_floating_point():
        y_pred = y_pred.float()
    if y_pred.dim() == 1:
        y_pred = y_pred.unsqueeze(-1)
    n_classes = y_pred.shape[-1]
    y_true = y_true.to(y_pred.device)
    if y_true.dim() == y_pred.dim() and y_true.shape[-1] == n_classes and n_classes > 1:
        labels = y_true.argmax(dim=-1)  # one-hot given
    else:
        labels = y_true.reshape(y_pred.shape[:-1]).round().long()
    log_p = torch.log(_normalise_probs(y_pred))
    return -log_p.gather(-1, labels.unsqueeze(-1)).squeeze(-1)


_LOSS_FNS = {
    "mean_squared_error": _mse,
    "mean_absolute_error": _mae,
    "mean_absolute_percentage_error": _mape,
    "mean_squared_logarithmic_error": _msle,
    "squared_hinge": _squared_hinge,
    "hinge": _hinge,
    "categorical_hinge": _categorical_hinge,
    "logcosh": _logcosh,
    "categorical_crossentropy": _categorical_crossentropy,
    "sparse_categorical_crossentropy": _sparse_categorical_crossentropy,
    "binary_crossentropy": _binary_crossentropy,
    "kullback_leibler_divergence": _kld,
    "poisson": _poisson,
}
_LOSS_ALIASES = {"mse": "mean_squared_error", "mae": "mean_absolute_error",
                 "mape": "mean_absolute_percentage_error", "msle": "mean_squared_logarithmic_error",
                 "kld": "kullback_leibler_divergence", "log_cosh": "logcosh"}


def loss(name):
    """Keras' loss `name` as a callable (y_pred_after_activation, y_true) -> scalar tensor, the
    mean of the per-sample losses over the batch."""
    key = _norm(name)
    key = _LOSS_ALIASES.get(key, key)
    if key not in _LOSS_FNS:
        raise _unknown("loss", name, LOSSES)
    per_sample = _LOSS_FNS[key]

    if key == "sparse_categorical_crossentropy":
        def fn(y_pred, y_true):
            return per_sample(y_pred, y_true).mean()
    else:
        def fn(y_pred, y_true):
            y_pred, y_true = _prep(y_pred, y_true)
            return per_sample(y_pred, y_true).mean()

    fn.__name__ = key
    fn.__qualname__ = key
    return fn


# --------------------------------------------------------------------------------------------
# Optimisers (Keras defaults other than the learning rate)
# --------------------------------------------------------------------------------------------
_OPTIMIZER_FACTORIES = {
    "sgd": lambda params, lr: torch.optim.SGD(params, lr=lr, momentum=0.0, nesterov=False),
    "rmsprop": lambda params, lr: torch.optim.RMSprop(params, lr=lr, alpha=0.9, eps=1e-7,
                                                      momentum=0.0, centered=False),
    "adagrad": lambda params, lr: torch.optim.Adagrad(params, lr=lr, initial_accumulator_value=0.1,
                                                      eps=1e-7),
    "adadelta": lambda params, lr: torch.optim.Adadelta(params, lr=lr, rho=0.95, eps=1e-7),
    "adam": lambda params, lr: torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-7,
                                                amsgrad=False),
    "adamax": lambda params, lr: torch.optim.Adamax(params, lr=lr, betas=(0.9, 0.999), eps=1e-7),
    "nadam": lambda params, lr: torch.optim.NAdam(params, lr=lr, betas=(0.9, 0.999), eps=1e-7),
}


def optimizer(name, params, lr):
    """Keras' optimiser `name` over `params` with learning rate `lr` (other hyperparameters at
    Keras' defaults)."""
    key = _norm(name)
    if key not in _OPTIMIZER_FACTORIES:
        raise _unknown("optimizer", name, OPTIMIZERS)
    return _OPTIMIZER_FACTORIES[key](params, float(lr))
