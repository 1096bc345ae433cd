"""Train a small MLP with AdamW and the warmup-cosine schedule on synthetic data."""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from schedule import lr_at, set_lr

BATCH_SIZE = 32
MAX_EPOCHS = 40
VAL_FRACTION = 0.1
PATIENCE = 5          # early stopping (Novak and Adeyemi, 2024)
MIN_DELTA = 1e-3


class MLP(nn.Module):
    def __init__(self, in_features, num_classes, hidden=256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):
        return self.net(x)


def make_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-8,
                             weight_decay=0.01)


def synthetic_data(n=800, d=20, num_classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g) * 3 + 1
    w = torch.randn(d, num_classes, generator=g)
    y = ((x - 1) @ w + 0.5 * torch.randn(n, num_classes, generator=g)).argmax(1)
    return x, y


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = synthetic_data()
    n_val = int(len(x) * VAL_FRACTION)
    perm = torch.randperm(len(x))
    x_val, y_val = x[perm[:n_val]], y[perm[:n_val]]
    x_tr, y_tr = x[perm[n_val:]], y[perm[n_val:]]
    mean, std = x_tr.mean(0), x_tr.std(0)          # training-split statistics
    x_tr, x_val = (x_tr - mean) / std, (x_val - mean) / std

    model = MLP(x.shape[1], 4)
    optimizer = make_optimizer(model)
    steps_per_epoch = math.ceil(len(x_tr) / BATCH_SIZE)
    total_steps = MAX_EPOCHS * steps_per_epoch
    step, best, bad, best_state = 0, float("inf"), 0, None
    for epoch in range(MAX_EPOCHS):
        model.train()
        order = torch.randperm(len(x_tr))
        for i in range(0, len(x_tr), BATCH_SIZE):
            idx = order[i:i + BATCH_SIZE]
            set_lr(optimizer, lr_at(step, total_steps))    # per optimizer step
            loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            step += 1
        model.eval()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(x_val), y_val).item()
        print(f"epoch {epoch + 1}: train loss {loss.item():.4f} val loss {val_loss:.4f} "
              f"lr {optimizer.param_groups[0]['lr']:.2e}")
        if val_loss < best - MIN_DELTA:
            best, bad, best_state = val_loss, 0, copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if bad >= PATIENCE:
                break
    model.load_state_dict(best_state)
    print(f"final best val loss {best:.4f}")


if __name__ == "__main__":
    main()
