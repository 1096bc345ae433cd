"""Train the gated SmallCNN on synthetic 32x32 images with warmup + cosine learning rate."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from gating import SmallCNN

PEAK_LR = 2e-3
MIN_LR = 1e-5
WARMUP_STEPS = 200
BATCH_SIZE = 128
EPOCHS = 30


def lr_at(step, total_steps, peak_lr=PEAK_LR, warmup_steps=WARMUP_STEPS, min_lr=MIN_LR):
    """Linear warmup to peak_lr, then cosine decay to min_lr (Moreau and Sato, 2025)."""
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


def synthetic_data(n=256, size=16, num_classes=10, seed=0, class_seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, num_classes, (n,), generator=g)
    x = torch.randn(n, 3, size, size, generator=g)
    offsets = torch.randn(num_classes, 3, generator=torch.Generator().manual_seed(class_seed))
    x += offsets[y][:, :, None, None]                       # class-dependent channel means
    return x, y


def normalize(x, mean, std):
    return (x - mean[None, :, None, None]) / std[None, :, None, None]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = synthetic_data()
    mean, std = x.mean(dim=(0, 2, 3)), x.std(dim=(0, 2, 3))  # training-set statistics
    x = normalize(x, mean, std)
    model = SmallCNN()
    optimizer = torch.optim.AdamW(model.parameters(), lr=PEAK_LR, weight_decay=0.05)
    steps_per_epoch = math.ceil(len(x) / BATCH_SIZE)
    total_steps = EPOCHS * steps_per_epoch
    step = 0
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            xb, yb = x[idx], y[idx]
            flip = torch.rand(len(xb)) < 0.5                 # random horizontal flip
            xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, total_steps)
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    x_test, y_test = synthetic_data(n=128, seed=1)
    x_test = normalize(x_test, mean, std)
    model.eval()
    with torch.no_grad():
        acc = (model(x_test).argmax(1) == y_test).float().mean().item()
    print(f"final loss {loss.item():.4f} test top-1 accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
