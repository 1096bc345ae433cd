"""D1-keras (StackOverflow 31880720): a binary classifier whose single output unit uses softmax,
written in Keras as the post writes it (the PyTorch rebuild is benchmarks/faults/real/D1).

Data (as in the post): 20,000 training rows of 128 features, 10,000 all ones (label True) and
10,000 all zeros (label False); a separate test set of 100 + 100 such rows, split 80/20 into
search/holdout (random_state=0). Nothing is random in the data itself.

Model (layer indices match the config keys):
  layer 0: Dense(50, activation=act0), Dropout(0.2)
  layer 1: Dense(50, activation=act1), Dropout(0.2), repeated layer1 times (0, 1 or 2)
  layer 2: Dense(1, activation=act2)   (softmax in the faulty program: a softmax over one unit is 1)
The metric is binary accuracy (output >= 0.5 means True).
"""
import functools

import keras
import numpy as np

N_FEATURES = 128
N_TRAIN_PER_CLASS = 10_000
N_TEST_PER_CLASS = 100
DROPOUT = 0.2

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
    """The post's data: all-ones rows are True, all-zeros rows are False. The test rows are split
    80/20 into search/holdout with random_state=0 (not stratified, as in the study)."""
    from sklearn.model_selection import train_test_split

    def rows(n_per_class):
        x = np.concatenate([np.ones((n_per_class, N_FEATURES)), np.zeros((n_per_class, N_FEATURES))])
        y = np.concatenate([np.ones(n_per_class), np.zeros(n_per_class)])
        return x.astype(np.float32), y.astype(np.float32).reshape(-1, 1)

    x_tr, y_tr = rows(N_TRAIN_PER_CLASS)
    x_te, y_te = rows(N_TEST_PER_CLASS)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0)
    return {"train": (x_tr, y_tr), "search": (x_se, y_se), "holdout": (x_ho, y_ho)}


def initializer(name):
    # Keras 3's "constant" needs its value; tf.keras 2's default was 0.
    return keras.initializers.Constant(0.0) if name == "constant" else name


def dense(units, config, i):
    return keras.layers.Dense(units, activation=config[f"act{i}"],
                              kernel_initializer=initializer(config[f"ki{i}"]),
                              bias_initializer=initializer(config[f"bi{i}"]))


def build_model(config):
    layers = [keras.Input(shape=(N_FEATURES,)), dense(50, config, 0), keras.layers.Dropout(DROPOUT)]
    for _ in range(config["layer1"]):
        layers += [dense(50, config, 1), keras.layers.Dropout(DROPOUT)]
    layers.append(dense(1, config, 2))
    return keras.Sequential(layers)


def accuracy(model, x, y):
    return float(np.mean((model.predict(x, verbose=0) >= 0.5) == y))


def train(config, seed):
    keras.utils.set_random_seed(seed)
    data = load_data()
    x_tr, y_tr = data["train"]
    loss = config["loss"]

    model = build_model(config)
    model.compile(optimizer=OPTIMIZERS[config["optimizer"]](learning_rate=config["lr"]),
                  loss=KERAS3_NAMES.get(loss, loss), metrics=["accuracy"])
    model.fit(x_tr, y_tr, epochs=config["epochs"], batch_size=config["batch_size"],
              validation_data=data["search"], verbose=0)

    return {"search": accuracy(model, *data["search"]), "holdout": accuracy(model, *data["holdout"])}


if __name__ == "__main__":
    import reprolab

    reprolab.run_script(train)
