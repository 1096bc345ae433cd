//! Shared vocabulary of reprolab: subjects and their manifests, configs, search spaces, fault
//! types and evaluation outcomes. Depends on nothing else of reprolab.

pub mod outcome;

pub use outcome::{Outcome, Split};
