"""mini-dl: metrics, layers and a training step for small PyTorch models."""

from mini_dl.layers import RMSNorm, TokenClassifier
from mini_dl.metrics import accuracy, dice_score
from mini_dl.train import train_step

__all__ = ["RMSNorm", "TokenClassifier", "accuracy", "dice_score", "train_step"]
