"""D8 (StackOverflow 56380303): learning "number mod 7" from the number's 20 bits.

Data (as in the post, generator seed 0, independent of the training seed): 10,000 random 20-bit
vectors (bit i has weight 2^i); the target is (number mod 7) written as a 20-bit vector the same
way (least significant bit first), so only the first three target bits can be set and the target
of a multiple of 7 is all zeros. Fixed 70/30 train/test split (random_state=0), the test part split
80/20 into search/holdout (random_state=0).

Model (layer indices match the config keys):
  layer 0: Dense(unit0) + act0
  layer 1: Dense(unit1) + act1, repeated layer1 times (0, 1 or 2)
  layer 2: Dense(20)    + act2   (softmax in the post)
The metric is Keras' categorical accuracy for this model: argmax of the output equals the argmax
of the target bit vector (the first set bit; bit 0 for an all-zero target).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_ROWS = 10_000
N_BITS = 20
RADIX = 7


@functools.lru_cache(maxsize=1)
def load_data():
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(N_ROWS, N_BITS))
    number = x @ (2 ** np.arange(N_BITS))
    y = (((number % RADIX)[:, None] >> np.arange(N_BITS)) & 1)  # LSB first, as the post
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0)
    return {name: (torch.from_numpy(a.astype(np.float32)), torch.from_numpy(b.astype(np.float32)))
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def dense(n_in, n_out, config, i):
    layer = nn.Linear(n_in, n_out)
    rnn.init_layer(layer, config[f"ki{i}"], config[f"bi{i}"])
    return [layer, rnn.activation(config[f"act{i}"])]


def build_model(config):
    mods = dense(N_BITS, config["unit0"], config, 0)
    width = config["unit0"]
    for _ in range(config["layer1"]):
        mods += dense(width, config["unit1"], config, 1)
        width = config["unit1"]
    mods += dense(width, N_BITS, config, 2)
    return nn.Sequential(*mods)


def n_correct(out, target):
    return int((out.argmax(dim=1) == target.argmax(dim=1)).sum())


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
