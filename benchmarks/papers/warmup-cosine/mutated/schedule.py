"""Linear warmup from zero, then cosine decay to a floor (Moreau and Sato, 2025)."""
import math


def lr_at(step, total_steps, peak_lr=1e-3, warmup_steps=50, min_lr=1e-5):
    """Learning rate at optimizer step `step` (0-based) of a run of `total_steps` steps."""
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    progress = min(progress, 1.0)
    return min_lr + (peak_lr - min_lr) * (1 - progress)


def set_lr(optimizer, lr):
    for group in optimizer.param_groups:
        group["lr"] = lr
