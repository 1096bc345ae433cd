"""What reprolab.keras_fit needs of Keras' TensorFlow backend to measure one batch: gradients by
a `tf.GradientTape`, which leaves the optimizer's state alone, and tensors as numpy arrays."""
from __future__ import annotations

import contextlib

import numpy as np
import tensorflow as tf


def to_numpy(x):
    """A copy of an eager tensor or a variable's value: a saved variable must not change with
    the variable."""
    return np.array(x)


def gradients(loss, variables):
    """The gradient of `loss()` with respect to each of `variables` (None where it does not
    depend on one), or None when there is nothing to differentiate."""
    if not variables:
        return None
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(variables)
        value = loss()
    return tape.gradient(value, variables, unconnected_gradients=tf.UnconnectedGradients.NONE)


def random_state_kept():
    """Keras' TensorFlow ops draw from seed generators (Keras variables, which the caller
    restores) through stateless ops, never from TensorFlow's global generator: nothing to keep."""
    return contextlib.nullcontext()
