//! Bug reproduction: from a deep-learning bug report to a script that shows the bug, judged by
//! running it (RepGen's task, with real execution as the judge instead of a simulated one).
//!
//! Modules, each with one job:
//! * [`agent`] – the LLM writes, execution judges: generate, run, compare, refine;
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
//! * [`verify`] – one script judged against one report (`reproduce verify`, each LLM attempt);
//! * [`plan`] – the model's plan of the script before the first attempt (RepGen's plan);
//! * [`precheck`] – static checks of a candidate before it runs (syntax, missing packages, the
//!   report's exception raised by the script itself, undefined names);
//! * [`minimize`] – hierarchical ddmin over statements while the verdict holds;
//! * [`opinion`] – a model's opinion on silent and code-inspection reports, kept apart from
//!   the verdict;
//! * [`outputs`] – `reproduce.py`, `requirements.txt`, `observed.txt`, `verdict.json`.

pub mod agent;
pub mod context;
pub mod dating;
pub mod facts;
pub mod minimize;
pub mod observe;
pub mod opinion;
pub mod outputs;
pub mod plan;
pub mod precheck;
pub mod report;
pub mod run;
pub mod verdict;
pub mod verify;

pub use facts::{Facts, Symptom};
pub use observe::{Observation, RunStatus};
pub use report::{BugReport, ReportError};
pub use verdict::{Verdict, judge};
