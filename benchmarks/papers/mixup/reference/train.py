"""Train the paper's MLP with blended pairs on a synthetic noisy-label Gaussian task."""
import numpy as np
import torch
import torch.nn as nn

from mixup import mix_batch, mixup_criterion, sample_lambda

NUM_CLASSES = 5
NUM_FEATURES = 20
EPOCHS = 20
BATCH_SIZE = 64


class MLP(nn.Module):
    """Two hidden layers of 512 units, each Linear -> BatchNorm -> ReLU (Section 2.3)."""

    def __init__(self, in_features: int, num_classes: int, hidden: int = 512):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def make_data(n: int, seed: int = 0, num_classes: int = NUM_CLASSES, dim: int = NUM_FEATURES):
    """Gaussian clusters: centres ~ N(0, 0.4^2), unit-variance noise around each centre."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(num_classes, dim, generator=g) * 0.4
    y = torch.randint(0, num_classes, (n,), generator=g)
    x = centres[y] + torch.randn(n, dim, generator=g)
    return x, y


def corrupt_labels(labels: torch.Tensor, num_classes: int, noise: float = 0.2, seed: int = 1) -> torch.Tensor:
    """Replace a fraction `noise` of the labels by a class drawn uniformly at random (Section 3.1)."""
    g = torch.Generator().manual_seed(seed)
    flip = torch.rand(labels.shape, generator=g) < noise
    random_labels = torch.randint(0, num_classes, labels.shape, generator=g)
    return torch.where(flip, random_labels, labels)


def minmax_scale(x_train: torch.Tensor, x_test: torch.Tensor):
    """Scale each feature to [0, 1] with the training split's minimum and maximum."""
    lo = x_train.min(dim=0).values
    span = (x_train.max(dim=0).values - lo).clamp_min(1e-8)
    return (x_train - lo) / span, (x_test - lo) / span


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    np.random.seed(0)
    x, y = make_data(4000, seed=0)
    x_train, x_test = minmax_scale(x[:3000], x[3000:])
    y_train = corrupt_labels(y[:3000], NUM_CLASSES)
    y_test = y[3000:]

    model = MLP(NUM_FEATURES, NUM_CLASSES)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.001, weight_decay=0.01)

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(x_train))
        total = 0.0
        for start in range(0, len(order), BATCH_SIZE):
            idx = order[start:start + BATCH_SIZE]
            lam = sample_lambda()
            mixed_x, y_a, y_b = mix_batch(x_train[idx], y_train[idx], lam)
            loss = mixup_criterion(model(mixed_x), y_a, y_b, lam)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        train_loss = total / len(x_train)

    model.eval()  # clean test inputs, batch norm in evaluation mode
    with torch.no_grad():
        acc = model(x_test).argmax(dim=-1).eq(y_test).float().mean().item()
    print(f"final train loss {train_loss:.4f}  test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
