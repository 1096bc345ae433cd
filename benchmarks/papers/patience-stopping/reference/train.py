"""Train an MLP on synthetic tabular data with validation patience and best-weight restore."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from stopping import fit, split_train_val

MAX_EPOCHS = 100
BATCH_SIZE = 64


def synthetic_data(n=900, d=12, num_classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g) * 2 + 3
    w = torch.randn(d, num_classes, generator=g)
    y = ((x - 3) @ w + 1.5 * torch.randn(n, num_classes, generator=g)).argmax(1)
    return x, y


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = synthetic_data(n=900)
    x, y, x_test, y_test = x[:600], y[:600], x[600:], y[600:]   # fixed test split
    x_tr, y_tr, x_val, y_val = split_train_val(x, y, val_fraction=0.2)
    mean, std = x_tr.mean(0), x_tr.std(0)             # statistics of the training portion only
    x_tr, x_val, x_test = (x_tr - mean) / std, (x_val - mean) / std, (x_test - mean) / std

    model = nn.Sequential(nn.Linear(x.shape[1], 64), nn.ReLU(), nn.Linear(64, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def train_one_epoch(m):
        m.train()
        order = torch.randperm(len(x_tr))
        for i in range(0, len(x_tr), BATCH_SIZE):
            idx = order[i:i + BATCH_SIZE]
            loss = F.cross_entropy(m(x_tr[idx]), y_tr[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    def validate(m):
        m.eval()
        with torch.no_grad():
            return F.cross_entropy(m(x_val), y_val).item()   # monitor validation loss

    history = fit(model, train_one_epoch, validate, max_epochs=MAX_EPOCHS)
    model.eval()
    with torch.no_grad():
        test_acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        val_loss = validate(model)
    print(f"stopped after {len(history)} epochs; best val loss {min(history):.4f}")
    print(f"restored model: val loss {val_loss:.4f} test accuracy {test_acc:.3f}")


if __name__ == "__main__":
    main()
