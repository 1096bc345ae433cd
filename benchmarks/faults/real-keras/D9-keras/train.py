"""D9-keras (StackOverflow 59325381): a small MNIST CNN whose training labels were divided by 255,
written in Keras as the post writes it (the PyTorch rebuild is benchmarks/faults/real/D9).

Data: scikit-learn's bundled 8x8 digits as the MNIST stand-in (MNIST cannot be downloaded here),
shaped (n, 8, 8, 1) (Keras' channels-last) and scaled to [0, 1] (/16, as the post scales MNIST by
/255). Fixed 70/30 stratified train/test split (random_state=0), the test part split 80/20
stratified into search/holdout (random_state=0).

The post's real bug is the preprocessing line `y_train = y_train / 255` next to `x_train =
x_train / 255`. It is the config switch `label_scale`: the program divides the training labels by
it and hands them to `fit` as they are; Keras casts them to integer class ids (truncated; as
`to_categorical` does for the other losses), so with label_scale = 255 every training label is
class 0. The test labels are never scaled.

Model (layer indices match the config keys; the post's 28x28 network scaled to 8x8 images):
  layer 0: Conv2D(64, 3, padding='same', activation=act0), MaxPooling2D(2)    8x8 -> 4x4
  layer 1: Conv2D(32, 3, padding='same', activation=act1), MaxPooling2D(2)    4x4 -> 2x2, Flatten (128)
  layer 2: Dense(unit2, activation=act2), repeated layer2 times (0, 1 or 2)   (Dense128-relu in the post)
  layer 3: Dense(10, activation=act3)                                         (softmax in the post)
The metric is accuracy (argmax of the outputs against the true test labels).
"""
import functools

import keras
import numpy as np

N_CLASSES = 10
SIDE = 8
FILTERS0, FILTERS1 = 64, 32

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
    x = (x / 16.0).astype(np.float32).reshape(-1, SIDE, SIDE, 1)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, stratify=y_te, random_state=0)
    return {"train": (x_tr, y_tr), "search": (x_se, y_se), "holdout": (x_ho, y_ho)}


def initializer(name):
    # Keras 3's "constant" needs its value; tf.keras 2's default was 0.
    return keras.initializers.Constant(0.0) if name == "constant" else name


def options(config, i):
    return dict(activation=config[f"act{i}"], kernel_initializer=initializer(config[f"ki{i}"]),
                bias_initializer=initializer(config[f"bi{i}"]))


def build_model(config):
    layers = [keras.Input(shape=(SIDE, SIDE, 1)),
              keras.layers.Conv2D(FILTERS0, 3, padding="same", **options(config, 0)),
              keras.layers.MaxPooling2D(2),
              keras.layers.Conv2D(FILTERS1, 3, padding="same", **options(config, 1)),
              keras.layers.MaxPooling2D(2),
              keras.layers.Flatten()]
    layers += [keras.layers.Dense(config["unit2"], **options(config, 2)) for _ in range(config["layer2"])]
    layers.append(keras.layers.Dense(N_CLASSES, **options(config, 3)))
    return keras.Sequential(layers)


def targets(y, loss):
    """The labels as given for the sparse loss, one-hot vectors (of the integer part) for every other."""
    return y if loss == "sparse_categorical_crossentropy" else keras.utils.to_categorical(y, N_CLASSES)


def accuracy(model, x, y):
    return float(np.mean(model.predict(x, verbose=0).argmax(axis=1) == y))


def train(config, seed):
    keras.utils.set_random_seed(seed)
    data = load_data()
    x_tr, y_tr = data["train"]
    x_se, y_se = data["search"]
    y_tr = y_tr / config["label_scale"]  # the post's `y_train = y_train / 255`
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
