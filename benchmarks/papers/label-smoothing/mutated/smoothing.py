"""Softened targets (label smoothing) and the calibration metric of the paper."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def smooth_targets(labels: torch.Tensor, num_classes: int, epsilon: float = 0.2) -> torch.Tensor:
    """q = (1 - epsilon) * onehot(y) + epsilon / K  (Section 2.1)."""
    onehot = F.one_hot(labels, num_classes).float()
    return (1.0 - epsilon) * onehot + epsilon / (num_classes - 1) * (1.0 - onehot)


class SmoothedCrossEntropy(nn.Module):
    """Cross-entropy against the softened target, averaged over the batch (Section 2.2)."""

    def __init__(self, num_classes: int, epsilon: float = 0.2):
        super().__init__()
        self.num_classes = num_classes
        self.epsilon = epsilon

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        targets = smooth_targets(labels, self.num_classes, self.epsilon)
        log_probs = F.log_softmax(logits, dim=-1)
        return -(targets * log_probs).sum(dim=-1).mean()


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor, n_bins: int = 15) -> float:
    """ECE with equal-width confidence bins (Section 3.2)."""
    confidences, predictions = probs.max(dim=-1)
    correct = predictions.eq(labels).float()
    edges = torch.linspace(0.0, 1.0, n_bins + 1)
    ece = torch.zeros(())
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (confidences > lo) & (confidences <= hi)
        if in_bin.any():
            frac = in_bin.float().mean()
            gap = (confidences[in_bin].mean() - correct[in_bin].mean()).abs()
            ece = ece + frac * gap
    return float(ece)
