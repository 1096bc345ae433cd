"""cancer-binary: a fully connected binary classifier for scikit-learn's bundled Wisconsin breast
cancer data (569 samples, 30 features; label 1 = benign, 0 = malignant).

Model (layer indices match the config keys):
  layer 0: Dense(unit0) + act0
  layer 1: Dense(unit1) + act1, repeated layer1 times (0, 1 or 2)
  layer 2: Dense(1)     + act2 (sigmoid in the correct program)
Trained with reprolab.nn's Keras-semantics losses and optimisers on y of shape (n, 1); the metric
is binary accuracy (output > 0.5, as Keras' binary_accuracy).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_FEATURES = 30


@functools.lru_cache(maxsize=1)
def load_data():
    """Fixed splits, independent of the seed: 70/30 stratified train/test (random_state=0),
    features standardised with the training part's mean and std, then the test part split 80/20
    stratified into search/holdout."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    x, y = load_breast_cancer(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, stratify=y_te, random_state=0)
    return {name: (torch.from_numpy(a.astype(np.float32)),
                   torch.from_numpy(b.astype(np.float32).reshape(-1, 1)))
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def dense(n_in, n_out, config, i):
    layer = nn.Linear(n_in, n_out)
    rnn.init_layer(layer, config[f"ki{i}"], config[f"bi{i}"])
    return [layer, rnn.activation(config[f"act{i}"])]


def build_model(config):
    mods = dense(N_FEATURES, config["unit0"], config, 0)
    width = config["unit0"]
    for _ in range(config["layer1"]):
        mods += dense(width, config["unit1"], config, 1)
        width = config["unit1"]
    mods += dense(width, 1, config, 2)
    return nn.Sequential(*mods)


def n_correct(out, y):
    return int(((out > 0.5).float() == y).sum())


def evaluate(model, loss_fn, x, y):
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = float(loss_fn(out, y))
        acc = n_correct(out, y) / len(y)
    model.train()
    return loss, acc


def train(config, seed):
    torch.set_num_threads(1)
    reprolab.seed_everything(seed)
    data = load_data()
    x_tr, y_tr = data["train"]
    x_se, y_se = data["search"]

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
            loss = loss_fn(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total_loss += float(loss.detach()) * len(idx)
            correct += n_correct(out.detach(), yb)
        val_loss, val_acc = evaluate(model, loss_fn, x_se, y_se)
        reprolab.log_epoch(epoch, loss=total_loss / n, acc=correct / n, val_loss=val_loss, val_acc=val_acc)

    _, search_acc = evaluate(model, loss_fn, *data["search"])
    _, holdout_acc = evaluate(model, loss_fn, *data["holdout"])
    return {"search": search_acc, "holdout": holdout_acc}


if __name__ == "__main__":
    import reprolab
    reprolab.run_script(train)
