"""Validation patience with a minimum improvement (Novak and Adeyemi, 2024)."""
import copy

import torch

PATIENCE = 5
MIN_DELTA = 1e-3


class EarlyStopper:
    """Counts epochs without an improvement of more than min_delta over the best loss."""

    def __init__(self, patience=PATIENCE, min_delta=MIN_DELTA):
        self.patience = patience
        self.min_delta = min_delta
        self.best = float("inf")
        self.counter = 0

    def improved(self, val_loss):
        return val_loss < self.best - self.min_delta      # absolute margin

    def step(self, val_loss):
        """Record one epoch's validation loss; return True when training should stop."""
        if self.improved(val_loss):
            self.best = val_loss
            self.counter = 0
        else:
            self.counter += 1
        return self.counter >= self.patience


def fit(model, train_one_epoch, validate, max_epochs=100, patience=PATIENCE, min_delta=MIN_DELTA):
    """Train until the stopper fires or max_epochs; restore the best weights. Returns val losses."""
    stopper = EarlyStopper(patience, min_delta)
    best_state = copy.deepcopy(model.state_dict())
    history = []
    for epoch in range(max_epochs):
        train_one_epoch(model)
        val_loss = float(validate(model))
        history.append(val_loss)
        if stopper.improved(val_loss):
            best_state = copy.deepcopy(model.state_dict())
        if stopper.step(val_loss):
            break
    model.load_state_dict(best_state)                     # restore the best epoch's weights
    return history


def split_train_val(x, y, val_fraction=0.2, seed=0):
    """Hold out a random val_fraction of the training data as the validation split."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(x), generator=g)
    n_val = int(round(len(x) * val_fraction))
    val, tr = perm[:n_val], perm[n_val:]
    return x[tr], y[tr], x[val], y[val]
