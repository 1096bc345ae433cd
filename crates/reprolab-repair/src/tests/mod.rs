//! Unit tests on synthetic objectives (`reprolab_search::testing`: no Python, no runtime).

mod guided;
mod judge;
mod repair_rules;
mod run;

pub use reprolab_search::Trace;
pub use reprolab_search::testing::*;
