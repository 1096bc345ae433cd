"""What reprolab.keras_fit needs of Keras' torch backend to measure one batch: gradients by torch
autograd, torch's global random state kept, tensors as numpy arrays."""
from __future__ import annotations

import contextlib

import numpy as np
import torch


def to_numpy(x):
    """A copy, detached, on the CPU: a saved variable must not change with the variable (torch's
    `.numpy()` shares memory; keras.ops.convert_to_numpy goes through numpy's deprecated
    copy-less `__array__` on torch tensors)."""
    return x.detach().cpu().numpy().copy() if torch.is_tensor(x) else np.array(x)


def gradients(loss, variables):
    """The gradient of `loss()` with respect to each of `variables` (None where it does not
    depend on one), or None when the loss has no gradient at all. `torch.autograd.grad` leaves
    the variables' `.grad`, which the optimizer reads, untouched."""
    with torch.enable_grad():
        value = loss()
    if not variables or not torch.is_tensor(value) or not value.requires_grad:
        return None
    return torch.autograd.grad(value, variables, allow_unused=True)


@contextlib.contextmanager
def random_state_kept():
    """Unseeded dropout draws from torch's global generator (Keras' fast path on torch): a
    measuring pass must leave it where training left it."""
    state = torch.get_rng_state()
    try:
        yield
    finally:
        torch.set_rng_state(state)
