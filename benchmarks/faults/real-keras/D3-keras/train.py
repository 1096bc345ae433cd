"""D3-keras (StackOverflow 45442843): a two-class classifier on one standardised feature, written
in Keras as the post writes it (the PyTorch rebuild is benchmarks/faults/real/D3).

Data (synthetic stand-in for the post's CSV, generator seed 0, independent of the training seed):
N_ROWS rows of one raw feature with a string label; class "no" (61%) has the feature drawn from
N(20, 3^2), class "yes" (39%) from N(40, 3^2), so the classes are separable by a threshold. The
feature is standardised (StandardScaler), the labels label-encoded and one-hot encoded (2 columns;
integer labels for sparse_categorical_crossentropy). Fixed 80/20 stratified train/test split
(random_state=0); the test part is split 80/20 stratified into search/holdout (random_state=0).

Model (layer indices match the config keys):
  layer 0: Dense(unit0, activation=act0), repeated layer0 times (0, 1 or 2)  (one sigmoid unit in the post)
  layer 1: Dense(2, activation=act1)                                       (softmax in the post)
The metric is accuracy (argmax of the two outputs against the label).
"""
import functools

import keras
import numpy as np

N_ROWS = 5000
N_CLASSES = 2

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
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import LabelEncoder, StandardScaler

    rng = np.random.default_rng(0)
    is_yes = rng.random(N_ROWS) < 0.39
    raw = np.where(is_yes, rng.normal(40.0, 3.0, N_ROWS), rng.normal(20.0, 3.0, N_ROWS))
    labels = np.where(is_yes, "yes", "no")

    x = StandardScaler().fit_transform(raw.reshape(-1, 1)).astype(np.float32)
    y = LabelEncoder().fit_transform(labels)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, stratify=y, random_state=0)
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
    layers = [keras.Input(shape=(1,))]
    layers += [dense(config["unit0"], config, 0) for _ in range(config["layer0"])]
    layers.append(dense(N_CLASSES, config, 1))
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
