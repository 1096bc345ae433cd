"""D9 (StackOverflow 59325381): a small MNIST CNN whose training labels were divided by 255.

Data: scikit-learn's bundled 8x8 digits as the MNIST stand-in (MNIST cannot be downloaded here),
shaped (n, 1, 8, 8) and scaled to [0, 1] (/16, as the post scales MNIST by /255). Fixed 70/30
stratified train/test split (random_state=0), the test part split 80/20 stratified into
search/holdout (random_state=0).

The post's real bug is the preprocessing line `y_train = y_train / 255` next to `x_train =
x_train / 255`. It is the config switch `label_scale`: the training labels become
y_train / label_scale, and a loss sees them as Keras does, cast to integer class ids (truncated),
so with label_scale = 255 every training label is class 0. The test labels are never scaled.

Model (layer indices match the config keys; the post's 28x28 network scaled to 8x8 images):
  layer 0: Conv2d(1 -> 64, 3x3, 'same')  + act0, MaxPool2d(2)    8x8 -> 4x4
  layer 1: Conv2d(64 -> 32, 3x3, 'same') + act1, MaxPool2d(2)    4x4 -> 2x2, Flatten (128)
  layer 2: Dense(unit2) + act2, repeated layer2 times (0, 1 or 2)  (Dense128-relu in the post)
  layer 3: Dense(10)    + act3                                     (softmax in the post)
The metric is accuracy (argmax of the outputs against the true test labels).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_CLASSES = 10
SIDE = 8
FILTERS0, FILTERS1 = 64, 32


@functools.lru_cache(maxsize=1)
def load_data():
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
    mods = with_act(nn.Conv2d(1, FILTERS0, 3, padding=1), config, 0) + [nn.MaxPool2d(2)]
    mods += with_act(nn.Conv2d(FILTERS0, FILTERS1, 3, padding=1), config, 1) + [nn.MaxPool2d(2)]
    mods += [nn.Flatten()]
    width = FILTERS1 * (SIDE // 4) * (SIDE // 4)
    for _ in range(config["layer2"]):
        mods += with_act(nn.Linear(width, config["unit2"]), config, 2)
        width = config["unit2"]
    mods += with_act(nn.Linear(width, N_CLASSES), config, 3)
    return nn.Sequential(*mods)


def one_hot(y):
    return torch.nn.functional.one_hot(y, N_CLASSES).float()


def training_labels(y, label_scale):
    """The post's preprocessing: y_train / label_scale, read back as integer class ids (Keras casts
    sparse labels to int; to_categorical does the same), i.e. truncated towards zero."""
    return torch.floor(y.double() / label_scale).long()


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
    x_tr, y_true = data["train"]
    x_se, y_se = data["search"]
    y_tr = training_labels(y_true, config["label_scale"])
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
