//! The project's one seeded random stream. Every random number reprolab draws (bootstrap
//! resampling, search proposals, the embedded model's token sampling, synthetic test noise)
//! comes from [`SplitMix64`], defined here rather than taken from `rand`, whose streams may
//! change between releases: a recorded run (a cached search, an LLM cassette) must replay the
//! same numbers for the same seed after any dependency upgrade.
//!
//! Module map:
//! * [`splitmix`]: [`SplitMix64`], the generator (raw 64-bit words, `below`, `next_f64`).
//! * [`draws`]: [`Rng`], SplitMix64 with decorrelated seeds and the draws the samplers need
//!   (uniform, integer, normal, weighted index).
//!
//! Depends on nothing (not even other reprolab crates), so the lowest crates (`reprolab-stats`,
//! `reprolab-llm-local`) can use it without depending on a sibling.

pub mod draws;
pub mod splitmix;

pub use draws::Rng;
pub use splitmix::SplitMix64;
