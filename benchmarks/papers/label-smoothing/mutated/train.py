"""Train the MLP of the paper with softened targets on a synthetic Gaussian task."""
import torch
import torch.nn as nn

from smoothing import SmoothedCrossEntropy, expected_calibration_error

NUM_CLASSES = 10
NUM_FEATURES = 32
EPOCHS = 30
BATCH_SIZE = 128


class MLP(nn.Module):
    """Two hidden layers of 256 units with ReLU, one logit per class (Section 2.3)."""

    def __init__(self, in_features: int, num_classes: int, hidden: int = 256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def make_data(n: int, seed: int = 0, num_classes: int = NUM_CLASSES, dim: int = NUM_FEATURES):
    """K isotropic Gaussian clusters, centres ~ N(0, 1) * 0.5, an equal number of points per class."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(num_classes, dim, generator=g) * 0.5
    y = torch.arange(n) % num_classes
    x = centres[y] + torch.randn(n, dim, generator=g)
    perm = torch.randperm(n, generator=g)
    return x[perm], y[perm]


def standardize(x_train: torch.Tensor, x_test: torch.Tensor):
    """Zero mean, unit variance with the training split's statistics, applied to both splits."""
    mean = x_train.mean(dim=0)
    std = x_train.std(dim=0).clamp_min(1e-8)
    return (x_train - mean) / std, (x_test - mean) / std


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = make_data(5000, seed=0)
    x_train, x_test = standardize(x[:4000], x[4000:])
    y_train, y_test = y[:4000], y[4000:]

    model = MLP(NUM_FEATURES, NUM_CLASSES)
    criterion = SmoothedCrossEntropy(num_classes=NUM_CLASSES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for epoch in range(EPOCHS):
        model.train()
        order = torch.arange(len(x_train))
        total = 0.0
        for start in range(0, len(order), BATCH_SIZE):
            idx = order[start:start + BATCH_SIZE]
            loss = criterion(model(x_train[idx]), y_train[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        train_loss = total / len(x_train)

    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(x_test), dim=-1)
    acc = probs.argmax(dim=-1).eq(y_test).float().mean().item()
    ece = expected_calibration_error(probs, y_test)
    print(f"final train loss {train_loss:.4f}  test accuracy {acc:.4f}  ECE {ece:.4f}")


if __name__ == "__main__":
    main()
