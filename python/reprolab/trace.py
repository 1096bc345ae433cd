"""Instrumentation for `reprolab trace`.

`reprolab.watch(model)` creates a Tracer only in trace mode (in eval mode it returns at once, no
hooks, no overhead). The tracer finds, in `model.named_modules()` order,

* the parametrised layers: modules with parameters of their own (Linear, Conv*, BatchNorm, ...),
  and
* the activation modules (ReLU, Sigmoid, Tanh, ELU, SELU, Softplus, Softsign, Softmax, Hardsigmoid,
  reprolab.nn's Exponential and Identity, ...); each parametrised layer is paired with the first
  activation module registered after it and before the next parametrised layer ("act").

Between two `log_epoch` calls (and from `watch` to the first one) it is "armed" once:

* activation statistics come from the first forward pass of the watched model in training mode
  with autograd enabled (the first training batch of the epoch);
* gradient statistics from the first backward pass that reaches the layer's parameters (that
  batch's backward): the gradient of that backward itself, read through tensor hooks, so later
  batches and gradient accumulation do not change it.

The hooks exist only while armed and are removed as soon as they have fired. At `log_epoch` the
tracer adds weight norms and a check for non-finite parameters and produces the `layers` list of
the trace record (docs/architecture.md, "Trace record"):

    {"name", "kind", "weight_norm", "grad_norm", "grad_zero_frac", "act", "dead_frac",
     "saturated_frac", "mean_abs_out"}

* dead_frac: fraction of units (features / channels) of the activation's output that are <= 0
  for every sample of the batch (a stricter reading of DeepDiagnosis' dead node, which counts
  entries <= 0), for every activation kind (the monitors count it as dead under relu-like ones);
* saturated_frac: fraction of the activation's input entries in the saturated region, for
  sigmoid-like activations (sigmoid, tanh, softsign: |x| > 5; hard_sigmoid: |x| >= 3, where its
  gradient is exactly zero); 0.0 for the others;
* mean_abs_out: mean |output| of the activation (of the layer itself when no activation follows
  it, in which case dead_frac and saturated_frac are null).

Statistics that could not be measured (no training forward/backward since the last epoch, frozen
parameters) and non-finite values are null. A reused activation module instance is measured on its
first call of the pass only.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from . import nn as _rnn

_SATURATION = {"sigmoid": 5.0, "tanh": 5.0, "softsign": 5.0, "hard_sigmoid": 3.0}

_ACT_NAMES = [
    (_rnn.Identity, "linear"),
    (_rnn.Exponential, "exponential"),
    (nn.ReLU, "relu"),
    (nn.ReLU6, "relu6"),
    (nn.LeakyReLU, "leaky_relu"),
    (nn.PReLU, "prelu"),
    (nn.RReLU, "rrelu"),
    (nn.Sigmoid, "sigmoid"),
    (nn.Tanh, "tanh"),
    (nn.ELU, "elu"),
    (nn.CELU, "celu"),
    (nn.SELU, "selu"),
    (nn.GELU, "gelu"),
    (nn.SiLU, "silu"),
    (nn.Mish, "mish"),
    (nn.Softplus, "softplus"),
    (nn.Softsign, "softsign"),
    (nn.Softmax, "softmax"),
    (nn.LogSoftmax, "log_softmax"),
    (nn.Hardsigmoid, "hard_sigmoid"),
    (nn.Hardtanh, "hard_tanh"),
    (nn.Hardswish, "hard_swish"),
    (nn.Tanhshrink, "tanhshrink"),
    (nn.Threshold, "threshold"),
]


def activation_name(module):
    """Keras-style name of an activation module, or None when `module` is not one."""
    for cls, name in _ACT_NAMES:
        if isinstance(module, cls):
            return name
    return None


def _f(x):
    """float or None (non-finite / missing)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _first_tensor(x):
    if torch.is_tensor(x):
        return x
    if isinstance(x, (tuple, list)):
        for item in x:
            t = _first_tensor(item)
            if t is not None:
                return t
    return None


class _Layer:
    __slots__ = ("name", "kind", "module", "params", "act_name", "act_module", "unit_dim",
                 "grad_sumsq", "grad_zeros", "grad_numel", "grad_seen",
                 "dead_frac", "saturated_frac", "mean_abs_out")

    def __init__(self, name, module):
        self.name = name
        self.module = module
        self.kind = type(module).__name__
        self.params = [p for p in module.parameters(recurse=False)]
        self.act_name = None
        self.act_module = None
        # units are channels (dim 1) after convolutions, features (last dim) otherwise
        self.unit_dim = 1 if self.kind.startswith("Conv") or "Norm" in self.kind else -1
        self.reset()

    def reset(self):
        self.grad_sumsq = 0.0
        self.grad_zeros = 0
        self.grad_numel = 0
        self.grad_seen = set()
        self.dead_frac = None
        self.saturated_frac = None
        self.mean_abs_out = None

    def weight_norm(self):
        w = getattr(self.module, "weight", None)
        tensors = [w] if torch.is_tensor(w) else self.params
        if not tensors:
            return None
        with torch.no_grad():
            sq = sum(float(t.detach().float().pow(2).sum()) for t in tensors)
        return _f(math.sqrt(sq)) if math.isfinite(sq) else None

    def record(self):
        if self.grad_numel:
            grad_norm = _f(math.sqrt(self.grad_sumsq)) if math.isfinite(self.grad_sumsq) else None
            grad_zero_frac = self.grad_zeros / self.grad_numel
        else:
            grad_norm = grad_zero_frac = None
        return {
            "name": self.name,
            "kind": self.kind,
            "weight_norm": self.weight_norm(),
            "grad_norm": grad_norm,
            "grad_zero_frac": _f(grad_zero_frac),
            "act": self.act_name,
            "dead_frac": _f(self.dead_frac),
            "saturated_frac": _f(self.saturated_frac),
            "mean_abs_out": _f(self.mean_abs_out),
        }


class _Watched:
    """One watched root model with its layers."""

    def __init__(self, tracer, model, prefix):
        self.tracer = tracer
        self.model = model
        self.layers = []
        self.capturing = False  # False: armed, waiting; True: in the captured pass; None: done
        self.fwd_handles = []
        self.grad_handles = []
        current = None
        for name, module in model.named_modules():
            act = activation_name(module)
            if act is not None:
                if current is not None and current.act_module is None:
                    current.act_module = module
                    current.act_name = act
                continue
            if any(True for _ in module.parameters(recurse=False)):
                qual = f"{prefix}{name}" if name else (prefix.rstrip(".") or type(module).__name__)
                current = _Layer(qual, module)
                self.layers.append(current)

    # -- arming ---------------------------------------------------------------------------
    def disarm(self):
        self._remove_forward_hooks()
        for h in self.grad_handles:
            h.remove()
        self.grad_handles = []
        self.capturing = False

    def _remove_forward_hooks(self):
        for h in self.fwd_handles:
            h.remove()
        self.fwd_handles = []

    def arm(self):
        self.disarm()
        for layer in self.layers:
            layer.reset()
        fwd = self.fwd_handles
        fwd.append(self.model.register_forward_pre_hook(self._root_pre))
        for layer in self.layers:
            if layer.act_module is None:
                fwd.append(layer.module.register_forward_hook(self._make_layer_hook(layer)))
            else:
                fwd.append(layer.act_module.register_forward_hook(self._make_act_hook(layer)))
            for i, p in enumerate(layer.params):
                if p.requires_grad:
                    self.grad_handles.append(p.register_hook(self._make_grad_hook(layer, i)))
        # last, so that it runs after the root's own layer/activation hooks
        fwd.append(self.model.register_forward_hook(self._root_post))

    def _root_pre(self, module, args):
        if self.capturing is None:  # already captured this epoch
            return
        if module.training and torch.is_grad_enabled():
            self.capturing = True

    def _root_post(self, module, args, output):
        if self.capturing:
            self.capturing = None  # done: this epoch's forward hooks are no longer needed
            self._remove_forward_hooks()

    # -- hooks ----------------------------------------------------------------------------
    def _make_layer_hook(self, layer):
        def hook(module, args, output):
            if self.capturing is not True or layer.mean_abs_out is not None:
                return
            out = _first_tensor(output)
            if out is not None and out.is_floating_point() and out.numel():
                with torch.no_grad():
                    layer.mean_abs_out = float(out.detach().abs().mean())
        return hook

    def _make_act_hook(self, layer):
        def hook(module, args, output):
            if self.capturing is not True or layer.dead_frac is not None:
                return
            out = _first_tensor(output)
            inp = _first_tensor(args)
            if out is None or not out.is_floating_point() or out.numel() == 0:
                return
            with torch.no_grad():
                o = out.detach()
                layer.mean_abs_out = float(o.abs().mean())
                if o.dim() >= 2:
                    dim = layer.unit_dim if layer.unit_dim < o.dim() else -1
                    units = o.movedim(dim, 0).reshape(o.shape[dim], -1)
                else:
                    units = o.reshape(1, -1)
                layer.dead_frac = float((units <= 0).all(dim=1).float().mean())
                threshold = _SATURATION.get(layer.act_name)
                if threshold is None or inp is None or not inp.is_floating_point():
                    layer.saturated_frac = 0.0
                else:
                    x = inp.detach().abs()
                    sat = (x >= threshold) if layer.act_name == "hard_sigmoid" else (x > threshold)
                    layer.saturated_frac = float(sat.float().mean())
        return hook

    def _make_grad_hook(self, layer, index):
        def hook(grad):
            if index in layer.grad_seen or grad is None:
                return None
            layer.grad_seen.add(index)
            with torch.no_grad():
                g = grad.detach()
                layer.grad_sumsq += float(g.float().pow(2).sum())
                layer.grad_zeros += int((g == 0).sum())
                layer.grad_numel += g.numel()
            return None
        return hook

    # -- epoch end ------------------------------------------------------------------------
    def params_nonfinite(self):
        with torch.no_grad():
            for p in self.model.parameters():
                if p.is_floating_point() and not bool(torch.isfinite(p).all()):
                    return True
        return False


class Tracer:
    """Per-run tracer; `reprolab.watch` creates one (trace mode only) and adds models to it."""

    def __init__(self):
        self.watched = []
        # Optimizer updates since the last epoch record: how much training an epoch was (a
        # large batch on a small dataset makes few), read by the `few_updates` symptom. A global
        # hook sees every torch optimizer; it dies with the run's process.
        self.steps = 0
        register_optimizer_step_post_hook(self._count_step)

    def _count_step(self, optimizer, args, kwargs):
        self.steps += 1

    def epoch_steps(self):
        """Optimizer updates since the last call (the epoch that just ended)."""
        steps, self.steps = self.steps, 0
        return steps

    def watch(self, model):
        if not isinstance(model, nn.Module):
            raise TypeError(f"reprolab.watch expects a torch.nn.Module, got {type(model).__name__}")
        if any(w.model is model for w in self.watched):
            return
        prefix = f"m{len(self.watched)}." if self.watched else ""
        w = _Watched(self, model, prefix)
        self.watched.append(w)
        w.arm()

    def arm(self):
        """Re-arm all hooks for the next epoch (called by log_epoch after recording)."""
        for w in self.watched:
            w.arm()

    def epoch_layers(self):
        """(layers records, any parameter non-finite) for the epoch that just ended."""
        layers = []
        nonfinite = False
        for w in self.watched:
            w.disarm()
            layers.extend(layer.record() for layer in w.layers)
            nonfinite = nonfinite or w.params_nonfinite()
        return layers, nonfinite
