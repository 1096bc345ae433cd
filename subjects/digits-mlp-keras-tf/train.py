"""digits-mlp-keras: digits-mlp written as a Keras 3 user writes it.

The same task, data splits, search space and metric as subjects/digits-mlp, with the model built
from Keras layers and trained by `model.fit`. The program knows nothing of reprolab's tracing:
reprolab attaches its callback to `fit` itself (per-epoch loss/accuracy, and in a trace the
per-layer gradients and activations).

Model (layer indices match the config keys):
  layer 0: Dense(unit0, activation=act0)
  layer 1: Dense(unit1, activation=act1), repeated layer1 times (0, 1 or 2)
  layer 2: Dense(10, activation=act2)   (softmax in the correct program)
"""
import functools

import keras
import numpy as np

N_CLASSES = 10

# The study's vocabulary is tf.keras 2's; Keras 3 renamed these.
KERAS3_NAMES = {"logcosh": "log_cosh", "kullback_leibler_divergence": "kl_divergence"}

OPTIMIZERS = {
    "sgd": keras.optimizers.SGD,
    "rmsprop": keras.optimizers.RMSprop,
    "adagrad": keras.optimizers.Adagrad,
    "adadelta": keras.optimizers.Adadelta,
    "adam": keras.optimizers.Adam,
    "adamax": keras.optimizers.Adamax,
    "nadam": keras.optimizers.Nadam,
}


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
    return {"train": (x_tr, y_tr), "search": (x_se, y_se), "holdout": (x_ho, y_ho)}


def initializer(name):
    # Keras 3's "constant" needs its value; tf.keras 2's default was 0.
    return keras.initializers.Constant(0.0) if name == "constant" else name


def dense(units, config, i):
    return keras.layers.Dense(units, activation=config[f"act{i}"],
                              kernel_initializer=initializer(config[f"ki{i}"]),
                              bias_initializer=initializer(config[f"bi{i}"]))


def build_model(config):
    layers = [keras.Input(shape=(64,)), dense(config["unit0"], config, 0)]
    layers += [dense(config["unit1"], config, 1) for _ in range(config["layer1"])]
    layers.append(dense(N_CLASSES, config, 2))
    return keras.Sequential(layers)


def targets(y, loss):
    """Integer labels for the sparse loss, one-hot vectors for every other."""
    return y if loss == "sparse_categorical_crossentropy" else keras.utils.to_categorical(y, N_CLASSES)


def accuracy(model, x, y):
    return float(np.mean(model.predict(x, verbose=0).argmax(axis=1) == y))


def train(config, seed):
    keras.utils.set_random_seed(seed)
    data = load_data()
    x_tr, y_tr = data["train"]
    x_se, y_se = data["search"]
    loss = config["loss"]

    model = build_model(config)
    model.compile(optimizer=OPTIMIZERS[config["optimizer"]](learning_rate=config["lr"]),
                  loss=KERAS3_NAMES.get(loss, loss), metrics=["accuracy"])
    model.fit(x_tr, targets(y_tr, loss), epochs=config["epochs"], batch_size=config["batch_size"],
              validation_data=(x_se, targets(y_se, loss)), verbose=0)

    return {"search": accuracy(model, x_se, y_se), "holdout": accuracy(model, *data["holdout"])}


if __name__ == "__main__":
    import reprolab

    reprolab.run_script(train)
