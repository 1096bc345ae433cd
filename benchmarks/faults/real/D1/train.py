"""D1 (StackOverflow 31880720): a binary classifier whose single output unit uses softmax.

Data (as in the post): 20,000 training rows of 128 features, 10,000 all ones (label True) and
10,000 all zeros (label False); a separate test set of 100 + 100 such rows, split 80/20 into
search/holdout (random_state=0). Nothing is random in the data itself.

Model (layer indices match the config keys):
  layer 0: Dense(50)  + act0, Dropout(0.2)
  layer 1: Dense(50)  + act1, Dropout(0.2), repeated layer1 times (0, 1 or 2)
  layer 2: Dense(1)   + act2 (softmax in the faulty program: a softmax over one unit is always 1)
The metric is binary accuracy (output >= 0.5 means True), as Keras reports it for this model.
"""
import functools

import numpy as np
import torch
from torch import nn

import reprolab
import reprolab.nn as rnn

N_FEATURES = 128
N_TRAIN_PER_CLASS = 10_000
N_TEST_PER_CLASS = 100
DROPOUT = 0.2


@functools.lru_cache(maxsize=1)
def load_data():
    """The post's data: all-ones rows are True, all-zeros rows are False. The test rows are split
    80/20 into search/holdout with random_state=0 (not stratified, as in the study)."""
    from sklearn.model_selection import train_test_split

    def rows(n_per_class):
        x = np.concatenate([np.ones((n_per_class, N_FEATURES)), np.zeros((n_per_class, N_FEATURES))])
        y = np.concatenate([np.ones(n_per_class), np.zeros(n_per_class)])
        return x.astype(np.float32), y.astype(np.float32)

    x_tr, y_tr = rows(N_TRAIN_PER_CLASS)
    x_te, y_te = rows(N_TEST_PER_CLASS)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0)
    return {name: (torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(b.reshape(-1, 1)))
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def dense(n_in, n_out, config, i, dropout):
    layer = nn.Linear(n_in, n_out)
    rnn.init_layer(layer, config[f"ki{i}"], config[f"bi{i}"])
    mods = [layer, rnn.activation(config[f"act{i}"])]
    if dropout:
        mods.append(nn.Dropout(DROPOUT))
    return mods


def build_model(config):
    mods = dense(N_FEATURES, 50, config, 0, dropout=True)
    for _ in range(config["layer1"]):
        mods += dense(50, 50, config, 1, dropout=True)
    mods += dense(50, 1, config, 2, dropout=False)
    return nn.Sequential(*mods)


def evaluate(model, loss_fn, x, y):
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = float(loss_fn(out, y))
        acc = int(((out >= 0.5).float() == y).sum()) / len(y)
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

    model.train()
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
            correct += int(((out.detach() >= 0.5).float() == yb).sum())
        val_loss, val_acc = evaluate(model, loss_fn, x_se, y_se)
        reprolab.log_epoch(epoch, loss=total_loss / n, acc=correct / n, val_loss=val_loss, val_acc=val_acc)

    _, search_acc = evaluate(model, loss_fn, *data["search"])
    _, holdout_acc = evaluate(model, loss_fn, *data["holdout"])
    return {"search": search_acc, "holdout": holdout_acc}


if __name__ == "__main__":
    import reprolab
    reprolab.run_script(train)
