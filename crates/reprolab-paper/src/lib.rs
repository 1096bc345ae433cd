//! Paper reproduction. Today: [`rubric`], PaperBench's rubric trees (weighted task nodes with
//! Code Development / Code Execution / Result Analysis leaves) and their grading, exactly as
//! PaperBench aggregates, with its Code-Dev reduction and invalid (unjudged) leaves kept visible.
//! The fingerprint, the implement loop and the criterion verifier of docs/paper.md come next.

pub mod document;
pub mod lineage;
pub mod rubric;

pub use document::{DocumentError, Paper, Reference, Section};
pub use lineage::{Corpus, Lineage, LineageError};
pub use rubric::{Grade, LeafScore, Rubric, RubricError};
