"""The modulated (focal) cross-entropy, its normalisation and the prior-initialised classifier."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sigmoid_focal_loss(logits: torch.Tensor, targets: torch.Tensor, alpha: float = 0.25, gamma: float = 2.0) -> torch.Tensor:
    """Per-example FL(p_t) = -alpha_t * (1 - p_t)^gamma * log(p_t) (Section 2.1)."""
    targets = targets.float()
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")  # -log(p_t)
    p_t = p * targets + (1 - p) * (1 - targets)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return alpha_t * (1 - p_t) ** gamma * ce


class FocalLoss(nn.Module):
    """Sum of the per-example losses divided by the number of positives, at least one (Section 2.2)."""

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0):
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        losses = sigmoid_focal_loss(logits, targets, self.alpha, self.gamma)
        num_pos = targets.float().sum().clamp_min(1.0)
        return losses.sum() / num_pos


class MLP(nn.Module):
    """Two hidden layers of 128 units with ReLU and one output logit (Sections 2.3 and 2.4)."""

    def __init__(self, in_features: int, hidden: int = 128, prior: float = 0.01):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.head = nn.Linear(hidden, 1)
        nn.init.normal_(self.head.weight, mean=0.0, std=0.01)
        nn.init.constant_(self.head.bias, -math.log((1 - prior) / prior))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x)).squeeze(-1)


def average_precision(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """Mean precision at the rank of each positive example (Section 3.2)."""
    order = torch.argsort(scores, descending=True)
    hits = labels[order].float()
    precision_at_k = hits.cumsum(0) / torch.arange(1, len(hits) + 1)
    return float((precision_at_k * hits).sum() / hits.sum().clamp_min(1.0))
