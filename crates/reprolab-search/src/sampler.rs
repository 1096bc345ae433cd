//! Optuna-style ask/tell samplers: the study loop asks for a config, trains it, and "tells" by
//! appending the [`Trial`] to the history it passes to the next ask.

use reprolab_core::{Config, SearchSpace};

use crate::Trial;
use crate::space::sample_config;
use reprolab_rng::Rng;

/// Proposes configs over a search space from the trials so far.
pub trait Sampler {
    /// The next config to evaluate: a value for every parameter of `space`, each inside its
    /// domain, in space order. `history` holds every trial so far (failed ones with value
    /// `None`), the faulty config first.
    fn ask(&mut self, space: &SearchSpace, history: &[Trial]) -> Config;

    /// The engine's name in reports (`random`, `tpe`).
    fn name(&self) -> &'static str;
}

/// Uniform sampling over the space, as the study's Random search: a choice uniformly, an
/// integer uniformly, a `float` uniformly (the study's `lr ~ uniform(1e-6, 10)`), a
/// `log-float` log-uniformly. Ignores the history.
#[derive(Debug, Clone)]
pub struct RandomSampler {
    rng: Rng,
}

impl RandomSampler {
    pub fn new(seed: u64) -> Self {
        RandomSampler {
            rng: Rng::new(seed),
        }
    }
}

impl Sampler for RandomSampler {
    fn ask(&mut self, space: &SearchSpace, _history: &[Trial]) -> Config {
        sample_config(space, &mut self.rng)
    }

    fn name(&self) -> &'static str {
        "random"
    }
}
