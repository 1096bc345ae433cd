"""D4-keras (StackOverflow 48385830): Nielsen's 784-30-10 MNIST network rebuilt in Keras, without
activations, with MSE and SGD at lr 3.0, written in Keras as the post writes it (the PyTorch
rebuild is benchmarks/faults/real/D4).

Data: scikit-learn's bundled 8x8 digits as the MNIST stand-in (MNIST cannot be downloaded here),
flattened to 64 features and scaled to [0, 1] (/16, as the post scales MNIST by /255); labels
one-hot (integer labels for sparse_categorical_crossentropy). Fixed 70/30 stratified train/test
split (random_state=0), the test part split 80/20 stratified into search/holdout (random_state=0).

Model (layer indices match the config keys):
  layer 0: Dense(unit0, activation=act0)   (no activation, i.e. linear, in the post)
  layer 1: Dense(10, activation=act1)      (no activation, i.e. linear, in the post)
Initialisers: the 13 of the study plus "random_normal_stddev1", Keras' RandomNormal(stddev=1)
that the post uses for every kernel and bias (Nielsen's initialisation).
The metric is accuracy (argmax of the outputs).
"""
import functools

import keras
import numpy as np

N_CLASSES = 10
N_FEATURES = 64
STDDEV1 = "random_normal_stddev1"

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
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, stratify=y_te, random_state=0)
    return {"train": (x_tr, y_tr), "search": (x_se, y_se), "holdout": (x_ho, y_ho)}


def initializer(name):
    if name == STDDEV1:
        return keras.initializers.RandomNormal(stddev=1.0)
    # Keras 3's "constant" needs its value; tf.keras 2's default was 0.
    return keras.initializers.Constant(0.0) if name == "constant" else name


def dense(units, config, i):
    return keras.layers.Dense(units, activation=config[f"act{i}"],
                              kernel_initializer=initializer(config[f"ki{i}"]),
                              bias_initializer=initializer(config[f"bi{i}"]))


def build_model(config):
    return keras.Sequential([keras.Input(shape=(N_FEATURES,)),
                             dense(config["unit0"], config, 0),
                             dense(N_CLASSES, config, 1)])


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
