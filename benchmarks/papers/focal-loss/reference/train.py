"""Train the prior-initialised MLP with the modulated cross-entropy on an imbalanced synthetic task."""
import torch

from focal import MLP, FocalLoss, average_precision

NUM_FEATURES = 16
EPOCHS = 10
BATCH_SIZE = 256


def make_data(n: int, seed: int = 0, dim: int = NUM_FEATURES, positive_fraction: float = 0.01):
    """Negatives ~ N(0, I); positives ~ N(0.5, I); exactly 1% positives, in random order."""
    g = torch.Generator().manual_seed(seed)
    n_pos = int(round(positive_fraction * n))
    y = torch.zeros(n, dtype=torch.long)
    y[:n_pos] = 1
    x = torch.randn(n, dim, generator=g) + 0.5 * y.unsqueeze(1).float()
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
    x_train, y_train = make_data(20000, seed=0)
    x_test, y_test = make_data(5000, seed=1)
    x_train, x_test = standardize(x_train, x_test)

    model = MLP(NUM_FEATURES)
    criterion = FocalLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=0.0001)

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(x_train))
        total, batches = 0.0, 0
        for start in range(0, len(order), BATCH_SIZE):
            idx = order[start:start + BATCH_SIZE]
            loss = criterion(model(x_train[idx]), y_train[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
        train_loss = total / batches

    model.eval()
    with torch.no_grad():
        ap = average_precision(model(x_test), y_test)
    print(f"final train loss {train_loss:.4f}  test average precision {ap:.4f}")


if __name__ == "__main__":
    main()
