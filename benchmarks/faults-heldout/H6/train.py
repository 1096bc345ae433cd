"""H6 (held-out fault): A GRU classifier trained with batch 512 for 3 epochs on 1,920 sequences: 12 updates in all. The fix: batch 32 and 15 epochs.

Data: 3,000 sequences of 20 steps, one feature from N(0, 1); the class is whether the sum of the first 10 steps exceeds the sum of the last 10; generator seed 0. Fixed 80/20 train/test split (random_state=0), the test part split 80/20 into search/holdout (random_state=0).

Model: `GRU(unit0)` (last state) + act0 → `Dense(N_OUT)+act1`.
Metric: accuracy (higher is better).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_IN = 1
N_OUT = 2
LOGGED = "acc"  # the epoch records' metric key


@functools.lru_cache(maxsize=1)
def load_data():
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (3000, 20, 1))
    y = (x[:, :10, 0].sum(axis=1) > x[:, 10:, 0].sum(axis=1)).astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0, stratify=y_te)
    return {name: (torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)), torch.from_numpy(b).long())
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


class LastState(nn.Module):
    """A GRU over the whole sequence, answering its last hidden state."""

    def __init__(self, n_in, units):
        super().__init__()
        self.gru = nn.GRU(n_in, units, batch_first=True)

    def forward(self, x):
        _, h = self.gru(x)
        return h[-1]


def build_model(config):
    out = nn.Linear(config["unit0"], N_OUT)
    rnn.init_layer(out, config["ki1"], config["bi1"])
    return nn.Sequential(LastState(N_IN, config["unit0"]), rnn.activation(config["act0"]),
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
