//! Benchmarks of reprolab over a fault benchmark: the rows each benchmark writes (one JSON line
//! per finished cell, so that a killed benchmark resumes), their aggregation, and the study's
//! tables and figures as [`reprolab_report::Report`]s. The binary runs the engines and shows
//! progress; everything that turns results into numbers and tables is here, testable on
//! synthetic rows.
//!
//! Module map:
//! - [`results`]: the `results.jsonl` file (read, resume, append) and wire names of enums.
//! - [`agg`]: mean, median, number formats, plain-string tables.
//! - [`faults`]: the faults of a benchmark a run covers (`--only`).
//! - [`localize`]: `bench localize` rows, votes over repeats, scoring before / after
//!   alternative ground truths, Tables 5 and 7 and the per-fault table.
//! - [`repair`]: `bench repair` rows (also with `--minimize`), AJ after alternative ground
//!   truths, Table 9, Figure 3, the per engine and budget summary and the targets.
//! - [`neutrality`]: the neutrality graph's picture (the study's Figure 1) and files, the
//!   `neutrality` command's summary and printed tables.
//! - [`paper`]: `bench paper` rows (the verifier on reference and mutated implementations,
//!   rubric grades, fingerprint recall) and their report.
//! - [`reproduce`]: `bench reproduce` rows (verify and reproduce runs) and their reports.
//! - [`trace`]: `reprolab trace`'s per-epoch and per-layer tables and its page of plots.

pub mod agg;
pub mod faults;
pub mod localize;
pub mod neutrality;
pub mod paper;
pub mod repair;
pub mod reproduce;
pub mod results;
pub mod trace;

pub use reprolab_report::Report;
pub use results::{ResultsFile, read_jsonl, serde_name};
