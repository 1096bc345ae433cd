"""H5 (held-out fault): A 1-D convolutional classifier of noisy sines trained with Adam at lr 0.5: the first steps throw the filters far off and most ReLUs die.

Data: 3,000 signals of 64 samples: a sine of 2, 4 or 6 cycles (the class) with random phase and amplitude 0.5..1.5 plus N(0, 0.6^2) noise, generator seed 0. Fixed 80/20 train/test split (random_state=0), the test part split 80/20 into search/holdout (random_state=0).

Model: `Conv1D(unit0 filters, kernel 5, same)+act0` → global max pooling → `Dense(N_OUT)+act1`.
Metric: accuracy (higher is better).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_IN = 64
N_OUT = 3
LOGGED = "acc"  # the epoch records' metric key


@functools.lru_cache(maxsize=1)
def load_data():
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(0)
    n, length = 3000, 64
    y = rng.integers(0, 3, n)
    t = np.arange(length) / length
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    amp = rng.uniform(0.5, 1.5, (n, 1))
    x = amp * np.sin(2 * np.pi * (2 + 2 * y)[:, None] * t + phase) + rng.normal(0, 0.6, (n, length))
    x = x[:, None, :]  # (N, channels = 1, length)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0, stratify=y_te)
    return {name: (torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)), torch.from_numpy(b).long())
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


class GlobalMaxPool(nn.Module):
    def forward(self, x):
        return x.amax(dim=-1)


def build_model(config):
    conv = nn.Conv1d(1, config["unit0"], kernel_size=5, padding=2)
    rnn.init_layer(conv, config["ki0"], config["bi0"])
    out = nn.Linear(config["unit0"], N_OUT)
    rnn.init_layer(out, config["ki1"], config["bi1"])
    return nn.Sequential(conv, rnn.activation(config["act0"]), GlobalMaxPool(),
                         out, rnn.activation(config["act1"]))


def targets(y):
    return torch.nn.functional.one_hot(y, N_OUT).float()


def score(out, y):
    return int((out.argmax(dim=1) == y).sum()) / len(y)


def evaluate(model, loss_fn, x, y):
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = float(loss_fn(out, targets(y)))
        value = score(out, y)
    model.train()
    return loss, value


def train(config, seed):
    torch.set_num_threads(1)
    reprolab.seed_everything(seed)
    data = load_data()
    x_tr, y_tr = data["train"]
    t_tr = targets(y_tr)

    model = build_model(config)
    reprolab.watch(model)
    loss_fn = rnn.loss(config["loss"])
    opt = rnn.optimizer(config["optimizer"], model.parameters(), config["lr"])
    bs = config["batch_size"]
    n = len(x_tr)

    for epoch in range(config["epochs"]):
        perm = torch.randperm(n)
        total_loss, total_metric = 0.0, 0.0
        for start in range(0, n, bs):
            idx = perm[start:start + bs]
            out = model(x_tr[idx])
            loss = loss_fn(out, t_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total_loss += float(loss.detach()) * len(idx)
            total_metric += score(out.detach(), y_tr[idx]) * len(idx)
        val_loss, val_metric = evaluate(model, loss_fn, *data["search"])
        reprolab.log_epoch(epoch, loss=total_loss / n, val_loss=val_loss,
                           **{LOGGED: total_metric / n, "val_" + LOGGED: val_metric})

    _, search = evaluate(model, loss_fn, *data["search"])
    _, holdout = evaluate(model, loss_fn, *data["holdout"])
    return {"search": search, "holdout": holdout}


if __name__ == "__main__":
    reprolab.run_script(train)
