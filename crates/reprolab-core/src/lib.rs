//! Shared vocabulary of reprolab: subjects and their manifests, configs, search spaces, fault
//! types and evaluation outcomes. Depends on nothing else of reprolab.

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

pub use config::Config;
pub use error::{Issue, IssueKind, ManifestError, Position};
pub use fault::{FaultLabel, FaultType, ParseFaultError, normalize_type};
pub use manifest::{
    Dataset, Entry, Fix, Framework, Goal, Limits, MANIFEST_FILE, Metric, PLACEHOLDERS, Subject,
    Task, expand_command,
};
pub use outcome::{Outcome, Split};
pub use program::ProgramView;
pub use space::{ConfigIssue, ConfigIssueKind, Param, ParamKind, SearchSpace};
pub use suspect::{Suspect, THRESHOLD};
