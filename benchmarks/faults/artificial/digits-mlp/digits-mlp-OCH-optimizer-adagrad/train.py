"""digits-mlp: a fully connected classifier for scikit-learn's bundled 8x8 handwritten digits.

Model (layer indices match the config keys):
  layer 0: Dense(unit0) + act0
  layer 1: Dense(unit1) + act1, repeated layer1 times (0, 1 or 2)
  layer 2: Dense(10)    + act2 (softmax in the correct program)
Trained with reprolab.nn's Keras-semantics losses and optimisers; the metric is accuracy.
"""
import functools
import time

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_CLASSES = 10


@functools.lru_cache(maxsize=1)
def load_data():
    """Fixed splits, independent of the seed: 70/30 stratified train/test (random_state=0), pixels
    scaled to [0, 1] (/16), then the test part split 80/20 stratified into search/holdout."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, stratify=y_te, random_state=0)
    return {name: (torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(b).long())
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def dense(n_in, n_out, config, i):
    layer = nn.Linear(n_in, n_out)
    rnn.init_layer(layer, config[f"ki{i}"], config[f"bi{i}"])
    return [layer, rnn.activation(config[f"act{i}"])]


def build_model(config):
    n_features = 64
    mods = dense(n_features, config["unit0"], config, 0)
    width = config["unit0"]
    for _ in range(config["layer1"]):
        mods += dense(width, config["unit1"], config, 1)
        width = config["unit1"]
    mods += dense(width, N_CLASSES, config, 2)
    return nn.Sequential(*mods)


def one_hot(y):
    return torch.nn.functional.one_hot(y, N_CLASSES).float()


def evaluate(model, loss_fn, x, y):
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = float(loss_fn(out, one_hot(y)))
        acc = int((out.argmax(dim=1) == y).sum()) / len(y)
    model.train()
    return loss, acc


def train(config, seed):
    torch.set_num_threads(1)
    reprolab.seed_everything(seed)
    data = load_data()
    x_tr, y_tr = data["train"]
    x_se, y_se = data["search"]
    t_tr = one_hot(y_tr)

    model = build_model(config)
    reprolab.watch(model)
    loss_fn = rnn.loss(config["loss"])
    opt = rnn.optimizer(config["optimizer"], model.parameters(), config["lr"])
    bs = config["batch_size"]
    n = len(x_tr)

    for epoch in range(config["epochs"]):
        perm = torch.randperm(n)
        total_loss, correct = 0.0, 0
        for start in range(0, n, bs):
            idx = perm[start:start + bs]
            xb, yb = x_tr[idx], y_tr[idx]
            out = model(xb)
            loss = loss_fn(out, t_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total_loss += float(loss.detach()) * len(idx)
            correct += int((out.detach().argmax(dim=1) == yb).sum())
        val_loss, val_acc = evaluate(model, loss_fn, x_se, y_se)
        reprolab.log_epoch(epoch, loss=total_loss / n, acc=correct / n, val_loss=val_loss, val_acc=val_acc)

    _, search_acc = evaluate(model, loss_fn, *data["search"])
    _, holdout_acc = evaluate(model, loss_fn, *data["holdout"])
    return {"search": search_acc, "holdout": holdout_acc}


if __name__ == "__main__":
    import reprolab
    reprolab.run_script(train)
