"""H4 (held-out fault): A regression network on an unscaled target (about 0..30) ending in a sigmoid, which cannot exceed 1, trained with a small learning rate. The fix: a linear output and lr 1e-3.

Data: scikit-learn make_friedman1: 2,000 rows, 10 features (5 used), noise 1.0, generator seed 0; the target (about 0..30) is not rescaled; metric: mean absolute error on it. Fixed 80/20 train/test split (random_state=0), the test part split 80/20 into search/holdout (random_state=0).

Model: `Dense(unit0)+act0` → `Dense(unit1)+act1` → `Dense(N_OUT)+act2`.
Metric: mae (lower is better).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_IN = 10
N_OUT = 1
LOGGED = "mae"  # the epoch records' metric key


@functools.lru_cache(maxsize=1)
def load_data():
    from sklearn.model_selection import train_test_split

    from sklearn.datasets import make_friedman1

    x, y = make_friedman1(n_samples=2000, n_features=10, noise=1.0, random_state=0)
    y = y.reshape(-1, 1)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0)
    return {name: (torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)), torch.from_numpy(b).float())
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def dense(n_in, n_out, config, i):
    layer = nn.Linear(n_in, n_out)
    rnn.init_layer(layer, config[f"ki{i}"], config[f"bi{i}"])
    return [layer, rnn.activation(config[f"act{i}"])]


def build_model(config):
    return nn.Sequential(*dense(N_IN, config["unit0"], config, 0),
                         *dense(config["unit0"], config["unit1"], config, 1),
                         *dense(config["unit1"], N_OUT, config, 2))


def targets(y):
    return y


def score(out, y):
    return float((out - y).abs().mean())


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
