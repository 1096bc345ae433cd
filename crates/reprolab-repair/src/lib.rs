//! Repair of a faulty subject's config: the repair engines that are not plain search
//! (AutoTrainer-style rules, FL-guided search, LLM suggestions), statistical validation of a patch on the holdout
//! split, patch minimisation by delta debugging, and the study's repair measures.
//!
//! The search engines (random, TPE, BOHB), the [`Objective`](reprolab_search::Objective) every
//! training goes through, budgets and the study loop are `reprolab-search`'s; the engines here
//! run on its [`Study`](reprolab_search::Study) and return its
//! [`SearchResult`](reprolab_search::SearchResult). Budgets are counted as the *sum* of the
//! trainings' durations, so that parallel workers do not change what a search sees.
//!
//! Module map:
//! * [`mod@rules`]: AutoTrainer's fixes for the symptoms `reprolab_core::symptoms` detects,
//!   validated by retraining ([`rules()`]).
//! * [`mod@guided`]: FL-guided repair ([`guided()`]): localisation's suggestions first, then TPE
//!   on the suspected parameters, widened to the whole space when that finds nothing.
//! * [`llm`]: repair by LLM suggestions (`llm`, `llm-refine`), coerced into the space.
//! * [`mod@validate`]: [`validate()`] a patch on the holdout split (significance, IR, AJ, complexity).
//! * [`mod@minimize`]: [`minimize()`] a patch with Zeller's ddmin.
//! * [`metrics`]: [`patch_diff`], [`ir`], [`complexity`], [`asymmetric_jaccard`].
//! * [`mod@run`]: one whole [`repair()`] with any [`Engine`]: time reference, search,
//!   validation, minimisation (what `reprolab repair` and `bench repair` run).
//!
//! Depends on `reprolab-core`, `reprolab-search`, `reprolab-stats` and `reprolab-llm`; not on
//! the executor (the binary wires it as the objective) nor on `reprolab-localize` (the guided
//! engine is given localisation as a function; both crates share `reprolab_core::Suspect`).

pub mod guided;
pub mod llm;
pub mod metrics;
pub mod minimize;
pub mod rules;
pub mod run;
pub mod validate;

#[cfg(test)]
mod tests;

use reprolab_search::SearchError;

pub use guided::guided;
pub use metrics::{asymmetric_jaccard, changed_types, complexity, gt_types, ir, patch_diff};
pub use minimize::{DdTest, Minimized, minimize};
pub use rules::{
    Attempt, Confirmation, Fix, RulesOptions, RulesResult, Skip, fixes, rules, rules_with,
};
pub use run::{BudgetReport, Engine, LlmRun, MinimizedRun, RepairRun, RepairSpec, repair, verdict};
pub use validate::{Group, Validation, validate};

/// Why a repair could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RepairError {
    /// The objective could not train at all (broken environment).
    #[error("training failed: {0}")]
    Objective(String),
    /// Bad settings (zero budget, zero workers, too few runs, …).
    #[error("invalid settings: {0}")]
    Settings(String),
    /// The patch does not fit the subject's search space.
    #[error("invalid patch: {0}")]
    Patch(String),
    /// The subject's search space has no parameters.
    #[error("the subject's search space is empty: nothing to search")]
    EmptySpace,
}

impl From<SearchError> for RepairError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::Objective(m) => RepairError::Objective(m),
            SearchError::Settings(m) => RepairError::Settings(m),
            SearchError::EmptySpace => RepairError::EmptySpace,
        }
    }
}

/// Converts the core crate's goal into the stats crate's.
pub(crate) fn stats_goal(goal: reprolab_core::Goal) -> reprolab_stats::Goal {
    match goal {
        reprolab_core::Goal::Max => reprolab_stats::Goal::Max,
        reprolab_core::Goal::Min => reprolab_stats::Goal::Min,
    }
}
