//! Bug reproduction: from a deep-learning bug report to a script that shows the bug, judged by
//! running it (RepGen's task, with real execution as the judge instead of a simulated one).
//!
//! Modules, each with one job:
//! * [`prepare`] – a report made ready: its facts, the environment for its versions (`--package`,
//!   `bug.json`, the report's own, as of its date), the seeds, the import directories;
//! * [`agent`] – the LLM writes, execution judges: generate, run, compare, refine;
//! * [`generate`] – `reproduce REPORT`: the loop, then its best attempt minimised, a model's
//!   opinion on silent reports, the files;
//! * [`bench`] – the per-bug work of `bench reproduce` and its rows;
//! * [`progress`] – what the long steps tell whoever shows progress (the binary's spinners);
//! * [`context`] – the project's or a pinned package's definitions ranked against the report
//!   (ast-split, BM25 over code-aware tokens, training loops for silent bugs);
//! * [`report`] – loading a report in the layouts users have;
//! * [`dating`] – when the report was written (a date field or line, its commit in a local
//!   checkout) and which frameworks it uses, for the versions it does not state;
//! * [`facts`] – what the report states (exceptions, tracebacks, warnings, versions, numbers)
//!   and the symptom class, extracted without an LLM;
//! * [`observe`] – what one run of a script showed;
//! * [`verdict`] – the rules that match runs against the report's symptom;
//! * [`run`] – running a script with several seeds in the sandbox, cached in the store;
//! * [`verify`] – one script judged against one report (each LLM attempt; `reproduce verify`,
//!   minimised on request);
//! * [`plan`] – the model's plan of the script before the first attempt (RepGen's plan);
//! * [`precheck`] – static checks of a candidate before it runs (syntax, missing packages, the
//!   report's exception raised by the script itself, undefined names);
//! * [`minimize`] – hierarchical ddmin over statements while the verdict holds, the shortest
//!   script re-judged;
//! * [`opinion`] – a model's opinion on silent and code-inspection reports, kept apart from
//!   the verdict;
//! * [`outputs`] – a judged script (`Judged`) and its files: `reproduce.py`, `requirements.txt`,
//!   `observed.txt`, `verdict.json`, `reproduce.full.py`, `attempts.json`.

pub mod agent;
pub mod bench;
pub mod context;
pub mod dating;
pub mod facts;
pub mod generate;
pub mod minimize;
pub mod observe;
pub mod opinion;
pub mod outputs;
pub mod plan;
pub mod precheck;
pub mod prepare;
pub mod progress;
pub mod report;
pub mod run;
pub mod verdict;
pub mod verify;

pub use facts::{Facts, Symptom};
pub use observe::{Observation, RunStatus};
pub use prepare::{Options, PrepareError, Prepared};
pub use report::{BugReport, ReportError};
pub use verdict::{Verdict, judge};
