"""D4 (StackOverflow 48385830): Nielsen's 784-30-10 MNIST network rebuilt in Keras, without
activations, with MSE and SGD at lr 3.0.

Data: scikit-learn's bundled 8x8 digits as the MNIST stand-in (MNIST cannot be downloaded here),
flattened to 64 features and scaled to [0, 1] (/16, as the post scales MNIST by /255); labels
one-hot. Fixed 70/30 stratified train/test split (random_state=0), the test part split 80/20
stratified into search/holdout (random_state=0).

Model (layer indices match the config keys):
  layer 0: Dense(unit0) + act0     (no activation, i.e. linear, in the post)
  layer 1: Dense(10)    + act1     (no activation, i.e. linear, in the post)
Initialisers: the 13 of the study plus "random_normal_stddev1", Keras' RandomNormal(stddev=1)
that the post uses for every kernel and bias (Nielsen's initialisation).
The metric is accuracy (argmax of the outputs).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_CLASSES = 10
N_FEATURES = 64
STDDEV1 = "random_normal_stddev1"


@functools.lru_cache(maxsize=1)
def load_data():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, stratify=y_te, random_state=0)
    return {name: (torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(b).long())
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def init_tensor(t, name):
    if name == STDDEV1:  # keras.initializers.RandomNormal(stddev=1)
        with torch.no_grad():
            return nn.init.normal_(t, mean=0.0, std=1.0)
    return rnn.initialize(t, name)


def dense(n_in, n_out, config, i):
    layer = nn.Linear(n_in, n_out)
    init_tensor(layer.weight, config[f"ki{i}"])
    init_tensor(layer.bias, config[f"bi{i}"])
    return [layer, rnn.activation(config[f"act{i}"])]


def build_model(config):
    mods = dense(N_FEATURES, config["unit0"], config, 0)
    mods += dense(config["unit0"], N_CLASSES, config, 1)
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
