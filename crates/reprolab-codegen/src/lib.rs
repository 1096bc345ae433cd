//! The deep-learning code-generation benchmark of reprolab, after Deep-Bench: task files
//! (function-level tasks and DL-Bench-style repository tasks), code extraction from model
//! answers, a sandboxed pytest harness with warm runners, unbiased pass@k and partial pass
//! rates by stage, task and data type, Deep-Bench's failure taxonomy assigned from the evidence
//! (optionally refined by an LLM classifier), and Markdown/HTML reports. Results are stored per
//! sample, so runs resume.
//!
//! Modules, each with one job:
//! * [`task`] – task files and their validation;
//! * [`generations`] – answers of any system (`--generations FILE`);
//! * [`generate`] – the [`generate::Generator`] trait a model is adapted to;
//! * [`llm`] – a chat model of `reprolab-llm` as the generator and the failure classifier;
//! * [`extract`] – code extraction from a raw answer;
//! * [`patch`] – putting a generated definition into a repository file;
//! * [`repo`] – hashing and copying a task's repository;
//! * [`runner`] – warm pytest runners, the fresh-process baseline, the `ast` helper;
//! * [`harness`] – the pipeline: extract, look up, patch, run, judge, store;
//! * [`outcome`] – statuses and per-test outcomes;
//! * [`taxonomy`] – failure categories and the rules that assign them;
//! * [`refine`] – an LLM classifier's second opinion on those labels, stored for reruns;
//! * [`metrics`] – pass@k, partial pass rate, grouped tables, taxonomy distribution;
//! * [`checks`] – task validity (reference, wrong solutions) and warm-vs-fresh runner times;
//! * [`report`], [`rundir`] – the run directory and its report.

pub mod checks;
pub mod extract;
pub mod generate;
pub mod generations;
pub mod harness;
pub mod llm;
pub mod metrics;
pub mod outcome;
pub mod patch;
pub mod refine;
pub mod repo;
pub mod report;
pub mod rundir;
pub mod runner;
pub mod task;
pub mod taxonomy;
#[cfg(test)]
mod testing;

pub use extract::{Extraction, Origin, extract_code};
pub use generate::Generator;
pub use generations::{Generation, load_generations};
pub use harness::{Harness, HarnessError, Options, OptionsError, TimeoutPolicy};
pub use metrics::{Summary, summarize};
pub use outcome::{Role, SampleResult, Status};
pub use rundir::RunDirError;
pub use task::{SelectError, Task, TaskKind, load_tasks};
