//! Paper reproduction. Today: [`rubric`], PaperBench's rubric trees (weighted task nodes with
//! Code Development / Code Execution / Result Analysis leaves) and their grading, exactly as
//! PaperBench aggregates, with its Code-Dev reduction and invalid (unjudged) leaves kept visible;
//! [`document`], a paper read from Markdown, text or a PDF's text layer (title, authors,
//! sections, parsed references); [`lineage`], a paper's references resolved in a local corpus
//! of papers and their code, ranked by relevance to the paper's method (docs/paper.md).
//! The fingerprint, the implement loop and the criterion verifier come next.

pub mod document;
pub mod lineage;
pub mod rubric;

pub use document::{DocumentError, Paper, Reference, Section};
pub use lineage::{Corpus, Lineage, LineageError};
pub use rubric::{Grade, LeafScore, Rubric, RubricError};
