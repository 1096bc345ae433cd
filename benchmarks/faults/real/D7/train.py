"""D7 (StackOverflow 51181393): linear regression y = 5x with one Dense unit and RMSprop.

Data (as in the post): x = linspace(1, 2, 100), y = 5x. Fixed 70/30 train/test split
(random_state=0), the test part split 80/20 into search/holdout (random_state=0).

Model (layer index matches the config keys):
  layer 0: Dense(1) + act0   (linear in the post)
The metric is the mean absolute error on the raw target (lower is better).
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn


@functools.lru_cache(maxsize=1)
def load_data():
    from sklearn.model_selection import train_test_split

    x = np.linspace(1, 2, 100).reshape(-1, 1)
    y = 5 * x
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0)
    return {name: (torch.from_numpy(a.astype(np.float32)), torch.from_numpy(b.astype(np.float32)))
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def build_model(config):
    layer = nn.Linear(1, 1)
    rnn.init_layer(layer, config["ki0"], config["bi0"])
    return nn.Sequential(layer, rnn.activation(config["act0"]))


def evaluate(model, loss_fn, x, y):
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = float(loss_fn(out, y))
        mae = float((out - y).abs().mean())
    model.train()
    return loss, mae


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
        total_loss, total_abs = 0.0, 0.0
        for start in range(0, n, bs):
            idx = perm[start:start + bs]
            xb, yb = x_tr[idx], y_tr[idx]
            out = model(xb)
            loss = loss_fn(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total_loss += float(loss.detach()) * len(idx)
            total_abs += float((out.detach() - yb).abs().sum())
        val_loss, val_mae = evaluate(model, loss_fn, x_se, y_se)
        reprolab.log_epoch(epoch, loss=total_loss / n, mae=total_abs / n, val_loss=val_loss, val_mae=val_mae)

    _, search_mae = evaluate(model, loss_fn, *data["search"])
    _, holdout_mae = evaluate(model, loss_fn, *data["holdout"])
    return {"search": search_mae, "holdout": holdout_mae}


if __name__ == "__main__":
    import reprolab
    reprolab.run_script(train)
