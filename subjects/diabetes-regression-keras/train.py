"""diabetes-regression-keras: diabetes-regression written as a Keras 3 user writes it.

The same task (scikit-learn's diabetes data, 10 standardised features, standardised target), data
splits, search space and metric as subjects/diabetes-regression, with the model built from Keras
layers and trained by `model.fit`. The program knows nothing of reprolab's tracing: reprolab
attaches its callback to `fit` itself.

Model (layer indices match the config keys):
  layer 0: Dense(unit0, activation=act0)
  layer 1: Dense(unit1, activation=act1), repeated layer1 times (0, 1 or 2)
  layer 2: Dense(1, activation=act2)     (linear in the correct program)
The metric "mse" is the mean squared error on the standardised target (MSE(raw) / std_train(y)^2:
about 1.0 for predicting the training mean, lower is better).
"""
import functools

import keras
import numpy as np

N_FEATURES = 10

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
    """Fixed splits, independent of the seed: 70/30 train/test (random_state=0), features and target
    standardised with the training part's mean and std, then the test part split 80/20 into
    search/holdout (random_state=0). Targets are float columns of shape (n, 1)."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    x, y = load_diabetes(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=0)
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    y_mean, y_std = y_tr.mean(), y_tr.std()
    y_tr, y_te = (y_tr - y_mean) / y_std, (y_te - y_mean) / y_std
    x_se, x_ho, y_se, y_ho = train_test_split(x_te, y_te, test_size=0.2, random_state=0)
    return {name: (a.astype(np.float32), b.astype(np.float32).reshape(-1, 1))
            for name, a, b in (("train", x_tr, y_tr), ("search", x_se, y_se), ("holdout", x_ho, y_ho))}


def initializer(name):
    # Keras 3's "constant" needs its value; tf.keras 2's default was 0.
    return keras.initializers.Constant(0.0) if name == "constant" else name


def dense(units, config, i):
    return keras.layers.Dense(units, activation=config[f"act{i}"],
                              kernel_initializer=initializer(config[f"ki{i}"]),
                              bias_initializer=initializer(config[f"bi{i}"]))


def build_model(config):
    layers = [keras.Input(shape=(N_FEATURES,)), dense(config["unit0"], config, 0)]
    layers += [dense(config["unit1"], config, 1) for _ in range(config["layer1"])]
    layers.append(dense(1, config, 2))
    return keras.Sequential(layers)


def mse(model, x, y):
    return float(np.mean((model.predict(x, verbose=0) - y) ** 2))


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

    return {"search": mse(model, *data["search"]), "holdout": mse(model, *data["holdout"])}


if __name__ == "__main__":
    import reprolab

    reprolab.run_script(train)
