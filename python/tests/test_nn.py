"""reprolab.nn: Keras vocabulary on PyTorch, checked against hand-computed values."""
import math

import pytest
import torch
from torch import nn

import reprolab.nn as rnn

torch.set_num_threads(1)


def t(rows):
    return torch.tensor(rows, dtype=torch.float32)


def approx(value, expected, rel=1e-5, abs_=1e-6):
    assert float(value) == pytest.approx(expected, rel=rel, abs=abs_)


# ----------------------------------------------------------------------------- losses
def test_mean_squared_and_absolute_error():
    y_pred, y_true = t([[1, 2], [3, 4]]), t([[1, 1], [1, 1]])
    approx(rnn.loss("mean_squared_error")(y_pred, y_true), (0.5 + 6.5) / 2)
    approx(rnn.loss("mean_absolute_error")(y_pred, y_true), (0.5 + 2.5) / 2)
    approx(rnn.loss("mean_squared_error")(t([[0.5, 0.5]]), t([[1, 0]])), 0.25)


def test_mean_absolute_percentage_error():
    approx(rnn.loss("mean_absolute_percentage_error")(t([[1, 5]]), t([[2, 4]])), 37.5)


def test_mean_squared_logarithmic_error():
    approx(rnn.loss("mean_squared_logarithmic_error")(t([[math.e - 1]]), t([[0]])), 1.0, rel=1e-5)
    approx(rnn.loss("mean_squared_logarithmic_error")(t([[1.0]]), t([[1.0]])), 0.0)


def test_hinge_losses_convert_binary_labels():
    y_true, y_pred = t([[0, 1]]), t([[0.3, 0.6]])
    approx(rnn.loss("hinge")(y_pred, y_true), (1.3 + 0.4) / 2)
    approx(rnn.loss("squared_hinge")(y_pred, y_true), (1.69 + 0.16) / 2)
    # already -1/1 labels are kept
    approx(rnn.loss("hinge")(t([[0.3, 0.6]]), t([[-1, 1]])), (1.3 + 0.4) / 2)


def test_categorical_hinge():
    approx(rnn.loss("categorical_hinge")(t([[0.2, 0.5, 0.3]]), t([[0, 1, 0]])), 0.8)
    approx(rnn.loss("categorical_hinge")(t([[0.0, 1.0, 0.0]]), t([[0, 1, 0]])), 0.0)


def test_logcosh():
    approx(rnn.loss("logcosh")(t([[1.0, 0.0]]), t([[0.0, 0.0]])), math.log(math.cosh(1.0)) / 2)


def test_categorical_crossentropy_normalises_and_clips():
    cce = rnn.loss("categorical_crossentropy")
    approx(cce(t([[0.2, 0.7, 0.1]]), t([[0, 1, 0]])), -math.log(0.7))
    # sigmoid-like outputs that do not sum to one are normalised first, as Keras does
    approx(cce(t([[0.4, 0.4]]), t([[1, 0]])), math.log(2.0))
    # a zero probability is clipped to 1e-7
    approx(cce(t([[1.0, 0.0]]), t([[0, 1]])), -math.log(1e-7), rel=1e-4)
    # mean over the batch
    approx(cce(t([[0.2, 0.7, 0.1], [0.5, 0.25, 0.25]]), t([[0, 1, 0], [1, 0, 0]])),
           (-math.log(0.7) - math.log(0.5)) / 2)


def test_sparse_categorical_crossentropy_accepts_one_hot_and_labels():
    scce = rnn.loss("sparse_categorical_crossentropy")
    y_pred = t([[0.2, 0.7, 0.1], [0.5, 0.25, 0.25]])
    expected = (-math.log(0.7) - math.log(0.5)) / 2
    approx(scce(y_pred, t([[0, 1, 0], [1, 0, 0]])), expected)
    approx(scce(y_pred, torch.tensor([1, 0])), expected)
    approx(scce(y_pred, t([[1], [0]])), expected)


def test_binary_crossentropy():
    bce = rnn.loss("binary_crossentropy")
    approx(bce(t([[0.8], [0.2]]), t([[1], [0]])), -math.log(0.8))
    approx(bce(t([[0.0]]), t([[1]])), -math.log(1e-7), rel=1e-4)
    # 1-D predictions/labels work too
    approx(bce(torch.tensor([0.8, 0.2]), torch.tensor([1.0, 0.0])), -math.log(0.8))


def test_kullback_leibler_divergence():
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    approx(rnn.loss("kullback_leibler_divergence")(t([[0.25, 0.75]]), t([[0.5, 0.5]])), expected)


def test_poisson():
    approx(rnn.loss("poisson")(t([[2.0]]), t([[1.0]])), 2.0 - math.log(2.0 + 1e-7))


@pytest.mark.parametrize("name", rnn.LOSSES)
def test_every_loss_is_differentiable(name):
    torch.manual_seed(0)
    logits = torch.randn(4, 3, requires_grad=True)
    y_pred = torch.softmax(logits, dim=-1)
    y_true = nn.functional.one_hot(torch.tensor([0, 1, 2, 1]), 3).float()
    value = rnn.loss(name)(y_pred, y_true)
    assert value.dim() == 0 and torch.isfinite(value)
    value.backward()
    assert logits.grad is not None


def test_loss_aliases():
    approx(rnn.loss("mse")(t([[0.5, 0.5]]), t([[1, 0]])), 0.25)


# ----------------------------------------------------------------------------- activations
@pytest.mark.parametrize("name", rnn.ACTIVATIONS)
def test_every_activation_constructs(name):
    m = rnn.activation(name)
    assert isinstance(m, nn.Module)
    out = m(torch.linspace(-2, 2, 10).reshape(2, 5))
    assert out.shape == (2, 5)


def test_activation_semantics():
    x = t([[-4.0, -3.0, 0.0, 1.5, 3.0]])
    assert rnn.activation("hard_sigmoid")(x).tolist() == [[0.0, 0.0, 0.5, 0.75, 1.0]]
    assert torch.allclose(rnn.activation("exponential")(x), torch.exp(x))
    lin = rnn.activation("linear")
    assert torch.equal(lin(x), x)
    assert isinstance(lin, rnn.Identity) and not isinstance(lin, nn.Linear)
    assert torch.allclose(rnn.activation("softmax")(x).sum(dim=-1), torch.ones(1))
    assert torch.allclose(rnn.activation("elu")(t([[-1.0]])), t([[math.exp(-1) - 1]]))


# ----------------------------------------------------------------------------- initializers
@pytest.mark.parametrize("name", rnn.INITIALIZERS)
def test_every_initializer_constructs(name):
    torch.manual_seed(0)
    layer = nn.Linear(20, 10)
    rnn.init_layer(layer, name, "zeros")
    assert torch.isfinite(layer.weight).all()
    assert torch.count_nonzero(layer.bias) == 0
    conv = nn.Conv2d(3, 4, 3)
    rnn.init_layer(conv, name, "ones" if name != "orthogonal" else "zeros")


def test_initializer_values():
    torch.manual_seed(0)
    layer = nn.Linear(100, 50)  # Keras kernel (100, 50): fan_in 100, fan_out 50

    def w(name):
        rnn.init_layer(layer, name, "zeros")
        return layer.weight.detach()

    assert torch.all(w("zeros") == 0) and torch.all(w("ones") == 1) and torch.all(w("constant") == 0)
    assert w("random_uniform").abs().max() <= 0.05
    assert w("random_normal").std().item() == pytest.approx(0.05, rel=0.05)
    tn = w("truncated_normal")
    assert tn.abs().max() <= 0.1 + 1e-7
    assert w("glorot_uniform").abs().max() <= math.sqrt(6 / 150)
    assert w("glorot_uniform").abs().max() > 0.9 * math.sqrt(6 / 150)
    assert w("he_uniform").abs().max() <= math.sqrt(6 / 100)
    assert w("lecun_uniform").abs().max() <= math.sqrt(3 / 100)
    # variance-scaling normals are truncated normals corrected to the target std
    assert w("glorot_normal").std().item() == pytest.approx(math.sqrt(2 / 150), rel=0.05)
    assert w("he_normal").std().item() == pytest.approx(math.sqrt(2 / 100), rel=0.05)
    assert w("lecun_normal").std().item() == pytest.approx(math.sqrt(1 / 100), rel=0.05)
    assert w("he_normal").abs().max() <= 2 * math.sqrt(2 / 100) / 0.87962566103423978 + 1e-6
    o = w("orthogonal")
    assert torch.allclose(o @ o.T, torch.eye(50), atol=1e-5)
    # conv fans: Keras kernel (3, 3, 3, 8) -> fan_in 27
    conv = nn.Conv2d(3, 8, 3)
    rnn.init_layer(conv, "he_uniform", "zeros")
    assert conv.weight.abs().max() <= math.sqrt(6 / 27)
    # a bias gets fan_in = fan_out = its length
    rnn.init_layer(layer, "zeros", "glorot_uniform")
    assert layer.bias.abs().max() <= math.sqrt(6 / 100)


def test_orthogonal_bias_is_rejected_as_in_keras():
    with pytest.raises(ValueError, match="two dimensions"):
        rnn.init_layer(nn.Linear(4, 3), "zeros", "orthogonal")


# ----------------------------------------------------------------------------- optimizers
# Constructing and stepping every optimizer, and their Keras defaults, are tested in
# test_worker.py (train_optimizers): torch's optimizers import torch._dynamo on first use, seconds
# that the worker has already paid for.


# ----------------------------------------------------------------------------- vocabulary
def test_value_lists():
    assert rnn.BATCH_SIZES == [16, 32, 64, 128, 256, 512]
    assert len(rnn.ACTIVATIONS) == 11 and len(rnn.INITIALIZERS) == 13
    assert len(rnn.LOSSES) == 13 and len(rnn.OPTIMIZERS) == 7


@pytest.mark.parametrize("fn, kind", [
    (lambda: rnn.activation("swishy"), "activation"),
    (lambda: rnn.loss("nope"), "loss"),
    (lambda: rnn.optimizer("adamw2", [nn.Parameter(torch.zeros(1))], 0.1), "optimizer"),
    (lambda: rnn.init_layer(nn.Linear(2, 2), "xavier", "zeros"), "initializer"),
])
def test_unknown_names_raise_value_error_listing_valid_ones(fn, kind):
    with pytest.raises(ValueError, match=f"unknown {kind}.*valid: "):
        fn()
