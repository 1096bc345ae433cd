//! The study's vocabulary: the Keras names and values its search spaces draw from (the same
//! lists as `python/reprolab/nn.py`, which maps them onto PyTorch), for whatever proposes or
//! checks a search space.

/// Activation functions.
pub const ACTIVATIONS: &[&str] = &[
    "elu",
    "softmax",
    "selu",
    "softplus",
    "softsign",
    "relu",
    "tanh",
    "sigmoid",
    "hard_sigmoid",
    "exponential",
    "linear",
];
/// Kernel and bias initialisers.
pub const INITIALIZERS: &[&str] = &[
    "zeros",
    "ones",
    "constant",
    "random_normal",
    "random_uniform",
    "truncated_normal",
    "orthogonal",
    "lecun_uniform",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "lecun_normal",
    "he_uniform",
];
/// Optimisers.
pub const OPTIMIZERS: &[&str] = &[
    "sgd", "rmsprop", "adagrad", "adadelta", "adam", "adamax", "nadam",
];
/// Losses.
pub const LOSSES: &[&str] = &[
    "mean_squared_error",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error",
    "squared_hinge",
    "hinge",
    "categorical_hinge",
    "logcosh",
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
    "binary_crossentropy",
    "kullback_leibler_divergence",
    "poisson",
];
/// Batch sizes.
pub const BATCH_SIZES: &[i64] = &[16, 32, 64, 128, 256, 512];
