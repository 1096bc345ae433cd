"""D6-keras (StackOverflow 50306988, "neural net fails on toy dataset"): two classes of 2-D points,
written in Keras as the post writes it (the PyTorch rebuild is benchmarks/faults/real/D6).

Data (as in the post, generator seed 0, independent of the training seed): 200 points, 100 per
class; class 1 has both coordinates drawn from U(0.2, 0.4), class 2 from U(0.5, 0.7); labels
label-encoded and one-hot encoded (2 columns; integer labels for sparse_categorical_crossentropy).
Fixed 70/30 stratified train/test split (random_state=0), the test part split 80/20 stratified
into search/holdout (random_state=0).

Model (layer indices match the config keys):
  layer 0: Dense(unit0, activation=act0)   (2 sigmoid units in the post)
  layer 1: Dense(2, activation=act1)       (softmax in the post)
The metric is accuracy (argmax of the two outputs).
"""
import functools

import keras
import numpy as np

DATASET_SIZE = 200
N_CLASSES = 2
N_FEATURES = 2

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
    from sklearn.preprocessing import LabelEncoder

    rng = np.random.default_rng(0)
    class_1 = rng.uniform(0.2, 0.4, size=DATASET_SIZE)
    class_2 = rng.uniform(0.5, 0.7, size=DATASET_SIZE)
    rows = []
    for i in range(0, DATASET_SIZE, 2):  # as the post builds its data frame
        rows.append([class_1[i], class_1[i + 1], 1])
        rows.append([class_2[i], class_2[i + 1], 2])
    rows = np.array(rows)
    x = rows[:, :2].astype(np.float32)
    y = LabelEncoder().fit_transform(rows[:, 2].astype(int))
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
