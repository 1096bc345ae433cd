"""Evaluation metrics on tensors."""

import torch


def _check_same_shape(pred: torch.Tensor, target: torch.Tensor) -> None:
    """Raise ValueError when two tensors that are compared element-wise differ in shape."""
    if pred.shape != target.shape:
        raise ValueError(f"shape mismatch: pred {tuple(pred.shape)} vs target {tuple(target.shape)}")


def accuracy(logits: torch.Tensor, target: torch.Tensor) -> float:
    """Fraction of rows of `logits` (N, C) whose argmax equals `target` (N,)."""
    if logits.shape[0] != target.shape[0]:
        raise ValueError("logits and target disagree on the number of samples")
    return (logits.argmax(dim=1) == target).float().mean().item()


def dice_score(pred: torch.Tensor, target: torch.Tensor, threshold: float = 0.5,
               eps: float = 1e-7) -> torch.Tensor:
    """Per-image Dice coefficient of binary segmentation masks.

    Args:
        pred: float tensor (N, H, W) of foreground probabilities; a pixel is foreground
            when pred > threshold.
        target: tensor (N, H, W) of {0, 1} ground-truth masks (any numeric or bool dtype).
        threshold: binarisation threshold for `pred`.
        eps: guards the division.

    Returns:
        float32 tensor (N,): for image n, (2 |P ∩ T| + eps) / (|P| + |T| + eps) where P and T
        are the foreground pixel sets, so an image where both masks are empty scores 1.

    Raises:
        ValueError: if pred and target shapes differ (use _check_same_shape).
    """
    _check_same_shape(pred, target)
    p = (pred > threshold).float().flatten(1)
    t = (target > 0).float().flatten(1)
    intersection = (p * t).sum(dim=1)
    return ((2 * intersection + eps) / (p.sum(dim=1) + t.sum(dim=1) + eps)).to(torch.float32)
