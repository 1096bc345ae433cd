import copy
import math

import pytest
import torch
from torch import nn

from mini_dl.train import train_step


def setup(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.0), nn.Linear(4, 2))
    x = torch.randn(6, 3)
    y = torch.tensor([0, 1, 0, 1, 1, 0])
    return model, (x, y)


def test_returns_loss_before_step_and_updates():
    model, batch = setup()
    before = copy.deepcopy(model)
    with torch.no_grad():
        expected = nn.functional.cross_entropy(before(batch[0]), batch[1]).item()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = train_step(model.eval(), batch, opt, nn.CrossEntropyLoss())
    assert math.isclose(loss, expected, rel_tol=1e-6)
    assert model.training
    assert not torch.equal(model[0].weight, before[0].weight)


def test_gradients_cleared_first():
    model, batch = setup(1)
    reference = copy.deepcopy(model)
    for p in model.parameters():
        p.grad = torch.full_like(p, 50.0)
    train_step(model, batch, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss())
    train_step(reference, batch, torch.optim.SGD(reference.parameters(), lr=0.1), nn.CrossEntropyLoss())
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


def test_gradient_clipping():
    model, batch = setup(2)
    manual = copy.deepcopy(model)
    loss = nn.functional.cross_entropy(manual(batch[0]), batch[1])
    grads = torch.autograd.grad(loss, list(manual.parameters()))
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    scale = min(1.0, 0.01 / (norm.item() + 1e-6))
    with torch.no_grad():
        for p, g in zip(manual.parameters(), grads):
            p -= 1.0 * g * scale
    train_step(model, batch, torch.optim.SGD(model.parameters(), lr=1.0), nn.CrossEntropyLoss(), max_grad_norm=0.01)
    for p, q in zip(model.parameters(), manual.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


def test_non_finite_loss_leaves_parameters_alone():
    model, batch = setup(3)
    before = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(FloatingPointError):
        train_step(model, batch, opt, lambda out, y: out.sum() * float("nan"))
    for p, q in zip(model.parameters(), before.parameters()):
        assert torch.equal(p, q)
