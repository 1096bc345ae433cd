"""digits-cnn: a small convolutional classifier for scikit-learn's bundled 8x8 handwritten digits.

Model (layer indices match the config keys; convolutions use 'valid' padding, stride 1):
  layer 0: Conv2d(1 -> filters0, kernel0 x kernel0)        + act0
  layer 1: Conv2d(filters0 -> filters1, kernel1 x kernel1) + act1
           MaxPool2d(2), Flatten
  layer 2: Dense(unit2) + act2, repeated layer2 times (0, 1 or 2)
  layer 3: Dense(10)    + act3 (softmax in the correct program)
Trained with reprolab.nn's Keras-semantics losses and optimisers; the metric is accuracy.
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_CLASSES = 10
SIDE = 8


@functools.lru_cache(maxsize=1)
def load_data():
    """Fixed splits, independent of the seed: 70/30 stratified train/test (random_state=0), pixels
    scaled to [0, 1] (/16), then the test part split 80/20 stratified into search/holdout.
    Images are shaped (n, 1, 8, 8)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, SIDE, SIDE)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, stratify=y_te, random_state=0)
    return {name: (torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(b).long())
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def with_act(layer, config, i):
    rnn.init_layer(layer, config[f"ki{i}"], config[f"bi{i}"])
    return [layer, rnn.activation(config[f"act{i}"])]


def build_model(config):
    k0, k1 = config["kernel0"], config["kernel1"]
    f0, f1 = config["filters0"], config["filters1"]
    side = SIDE - k0 + 1          # after conv0
    side = side - k1 + 1          # after conv1
    side = side // 2              # after 2x2 max pooling
    if side < 1:
        raise ValueError(f"kernel sizes {k0} and {k1} leave no pixels of an {SIDE}x{SIDE} image")
    mods = with_act(nn.Conv2d(1, f0, k0), config, 0)
    mods += with_act(nn.Conv2d(f0, f1, k1), config, 1)
    mods += [nn.MaxPool2d(2), nn.Flatten()]
    width = f1 * side * side
    for _ in range(config["layer2"]):
        mods += with_act(nn.Linear(width, config["unit2"]), config, 2)
        width = config["unit2"]
    mods += with_act(nn.Linear(width, N_CLASSES), config, 3)
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
