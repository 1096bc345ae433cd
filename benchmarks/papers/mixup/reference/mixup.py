"""Blended pairs (mixup): the mixing weight, the blended batch and the blended loss."""
import numpy as np
import torch
import torch.nn.functional as F


def sample_lambda(alpha: float = 0.2) -> float:
    """One mixing weight per mini-batch, lambda ~ Beta(alpha, alpha) (Section 2.1)."""
    return float(np.random.beta(alpha, alpha))


def mix_batch(x: torch.Tensor, y: torch.Tensor, lam: float, index: torch.Tensor = None):
    """Blend the batch with a shuffled copy of itself.

    Returns the blended inputs lam * x + (1 - lam) * x[index] and the two label vectors
    (y, y[index]) whose blend lam * onehot(y) + (1 - lam) * onehot(y[index]) is the target.
    """
    if index is None:
        index = torch.randperm(x.size(0))
    mixed_x = lam * x + (1.0 - lam) * x[index]
    return mixed_x, y, y[index]


def mixup_criterion(logits: torch.Tensor, y_a: torch.Tensor, y_b: torch.Tensor, lam: float) -> torch.Tensor:
    """L = lam * CE(f(x~), y_a) + (1 - lam) * CE(f(x~), y_b) (Section 2.2)."""
    return lam * F.cross_entropy(logits, y_a) + (1.0 - lam) * F.cross_entropy(logits, y_b)
