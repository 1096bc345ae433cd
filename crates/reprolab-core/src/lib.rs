//! Shared vocabulary of reprolab: subjects and their manifests, configs, search spaces, fault
//! types and evaluation outcomes. Depends on nothing else of reprolab.
//!
//! Module map:
//! * [`manifest`] (with [`error`]): `reprolab.toml` → [`Subject`], with positioned issues.
//! * [`config`]: [`Config`]; [`space`]: [`SearchSpace`], [`Param`], config validation.
//! * [`fault`]: [`FaultType`], [`FaultLabel`], [`normalize_type`] (the study's merges).
//! * [`outcome`]: [`Outcome`], [`Split`]; [`fnum`]: serde helpers for non-finite floats.
//! * [`hash`]: content hashing (the evaluation cache's keys); [`program`]: [`ProgramView`].
//! * [`symptoms`]: trace records and AutoTrainer's symptom checks; [`suspect`]: [`Suspect`].
//! * [`vocabulary`]: the study's value lists (activations, initialisers, optimisers, losses,
//!   batch sizes).
//!
//! Why `symptoms` and `suspect` are here: both are read by two strategy crates that must not
//! depend on each other. Dynamic localisation (`reprolab-localize`) maps symptoms to suspected
//! faults and the rules repair engine (`reprolab-repair`) maps the same symptoms to fixes, with
//! the same thresholds; localisation produces [`Suspect`]s and FL-guided repair consumes them.
//! They need nothing but serde, so core, the crate both already depend on, is the lowest place;
//! a module of `reprolab-search` would tie localisation to the search layer it has no use for.

pub mod config;
pub mod error;
pub mod fault;
pub mod fnum;
pub mod hash;
pub mod manifest;
pub mod outcome;
pub mod program;
pub mod space;
pub mod suspect;
pub mod symptoms;
pub mod vocabulary;

pub use config::Config;
pub use error::{Issue, IssueKind, ManifestError, Position, chain};
pub use fault::{FaultLabel, FaultType, ParseFaultError, normalize_type};
pub use manifest::{
    Dataset, Entry, Fix, Framework, Goal, KerasBackend, Limits, MANIFEST_FILE, Metric,
    PLACEHOLDERS, Subject, Task, TemplateError, expand_command,
};
pub use outcome::{Outcome, PruneSpec, Split};
pub use program::{ProgramError, ProgramView};
pub use space::{ConfigIssue, ConfigIssueKind, Param, ParamKind, SearchSpace};
pub use suspect::{Suspect, THRESHOLD};
