//! Paper reproduction (docs/paper.md).
//!
//! - [`document`]: a paper read from Markdown, text or a PDF's text layer (title, authors,
//!   sections, parsed references).
//! - [`lineage`]: a paper's references resolved in a local corpus of papers and their code,
//!   ranked by relevance to the paper's method; [`online`]: the references it lacks looked up
//!   on arXiv and GitHub (only when asked), through an on-disk cache.
//! - [`benchmark`]: the bundled papers (benchmarks/papers): gold fingerprint, rubric, reference
//!   and mutated implementations, known violations.
//! - [`fingerprint`]: a paper's criteria (fact, scope, category, source sentence, checks),
//!   grounding and de-duplication.
//! - [`extract`]: a fingerprint extracted by an LLM section by section, then grounded, filtered
//!   and de-duplicated by rules; recall against a gold fingerprint.
//! - [`codefacts`]: a code directory's constants and calls, read with Python's `ast`.
//! - [`checks`]: static checks decided from those facts.
//! - [`verify`]: every criterion decided by the strongest checker that applies: static, then
//!   execution probes (a [`verify::Prober`]), then a [`verify::Judge`].
//! - [`judge`]: the LLM judge (PaperBench's Expectations / Reality / Score, k votes), over
//!   the code as [`code`] shows it to a model.
//! - [`edit`]: SEARCH/REPLACE edit blocks, parsed and applied (exact, then indentation-blind).
//! - [`implement`]: the implement loop: plan, write, then rounds of smoke run → verify →
//!   revise with SEARCH/REPLACE edits, every round kept and resumable.
//! - [`rubric`]: PaperBench's rubric trees and their grading, exactly as PaperBench aggregates,
//!   with its Code-Dev reduction and invalid (unjudged) leaves kept visible.

pub mod benchmark;
pub mod checks;
pub mod code;
pub mod codefacts;
pub mod document;
pub mod edit;
pub mod extract;
pub mod fingerprint;
pub mod implement;
pub mod judge;
pub mod lineage;
pub mod online;
pub mod rubric;
pub mod verify;

pub use checks::{Checker, Outcome};
pub use document::{DocumentError, Paper, Reference, Section};
pub use fingerprint::{Criterion, Fingerprint, FingerprintError};
pub use lineage::{Corpus, Lineage, LineageError};
pub use rubric::{Grade, LeafScore, Rubric, RubricError};
pub use verify::{Verdict, Verification};

/// Writes `bytes` aside and renames, so that a killed run never leaves half a file.
pub(crate) fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
