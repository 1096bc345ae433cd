"""D7-keras (StackOverflow 51181393): linear regression y = 5x with one Dense unit and RMSprop,
written in Keras as the post writes it (the PyTorch rebuild is benchmarks/faults/real/D7).

Data (as in the post): x = linspace(1, 2, 100), y = 5x. Fixed 70/30 train/test split
(random_state=0), the test part split 80/20 into search/holdout (random_state=0).

Model (layer index matches the config keys):
  layer 0: Dense(1, activation=act0)   (linear in the post)
The metric is the mean absolute error on the raw target (lower is better).
"""
import functools

import keras
import numpy as np

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

    x = np.linspace(1, 2, 100).reshape(-1, 1)
    y = 5 * x
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=0)
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0)
    return {name: (a.astype(np.float32), b.astype(np.float32))
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def initializer(name):
    # Keras 3's "constant" needs its value; tf.keras 2's default was 0.
    return keras.initializers.Constant(0.0) if name == "constant" else name


def build_model(config):
    return keras.Sequential([keras.Input(shape=(1,)),
                             keras.layers.Dense(1, activation=config["act0"],
                                                kernel_initializer=initializer(config["ki0"]),
                                                bias_initializer=initializer(config["bi0"]))])


def mae(model, x, y):
    return float(np.mean(np.abs(model.predict(x, verbose=0) - y)))


def train(config, seed):
    keras.utils.set_random_seed(seed)
    data = load_data()
    x_tr, y_tr = data["train"]
    loss = config["loss"]

    model = build_model(config)
    model.compile(optimizer=OPTIMIZERS[config["optimizer"]](learning_rate=config["lr"]),
                  loss=KERAS3_NAMES.get(loss, loss), metrics=["mae"])
    model.fit(x_tr, y_tr, epochs=config["epochs"], batch_size=config["batch_size"],
              validation_data=data["search"], verbose=0)

    return {"search": mae(model, *data["search"]), "holdout": mae(model, *data["holdout"])}


if __name__ == "__main__":
    import reprolab

    reprolab.run_script(train)
