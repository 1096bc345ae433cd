"""Layers."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    """Root-mean-square layer normalisation (Zhang & Sennrich, 2019), as used in LLaMA.

    Normalises over the last dimension without centring: y = x / sqrt(mean(x^2) + eps) * weight.
    """

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply RMS normalisation over the last dimension.

        Args:
            x: tensor (..., dim) of any floating dtype.

        Returns:
            tensor of the same shape AND dtype as x:
            x / sqrt(mean(x ** 2 over the last dim) + self.eps) * self.weight.
            The statistics are computed in float32 even for float16/bfloat16 inputs, and the
            result is cast back to x's dtype.
        """
        x32 = x.float()
        rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x32 * rms).to(x.dtype) * self.weight.to(x.dtype)


class TokenClassifier(nn.Module):
    """Embedding -> RMSNorm -> linear classifier over tokens (one label per token)."""

    def __init__(self, vocab_size: int, dim: int, num_labels: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, num_labels)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.embed(tokens)))
