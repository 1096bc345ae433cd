//! Statistics layer of reprolab.
//!
//! reprolab judges *repeated* stochastic deep-learning trainings: the same
//! configuration is trained `n` times with different seeds, and two such
//! groups (a baseline `A` and a candidate `B`) are compared. A single run tells
//! nothing because training noise is often as large as the effect of a change,
//! so every comparison here is a test over the run distribution plus an effect
//! size, and the final call is made by [`verdict()`].
//!
//! Each module does one job:
//!
//! * [`describe`] – per-group summary (mean, std, median, t-based CI).
//! * [`wilcoxon`] – paired Wilcoxon signed-rank test (exact even with ties).
//! * [`mann_whitney`] – unpaired Mann–Whitney U test.
//! * [`ttest`] – Welch and paired t-tests.
//! * [`effect`] – Cohen's d and Vargha–Delaney A12.
//! * [`bootstrap`] – deterministic percentile bootstrap.
//! * [`glm`] – DeepCrime's GLM/Wald test.
//! * [`mod@verdict`] – the study's Better / Worse / not-significant rule;
//! * [`mod@compare`] – B against A: the tests, effect sizes and verdict together.
//! * [`mod@tost`] – equivalence within a margin (two one-sided Wilcoxon tests).
//! * [`passk`] – the unbiased pass@k estimator of code-generation benchmarks.
//!
//! Reference values in the unit tests were computed once with SciPy 1.17 and
//! pasted as literals; the Python snippet is next to every literal.
//!
//! All functions assume finite inputs (no NaN); callers drop failed runs first.

pub mod bootstrap;
pub mod compare;
pub mod describe;
mod dist;
pub mod effect;
pub mod glm;
pub mod mann_whitney;
pub mod passk;
mod rank;
pub mod tost;
pub mod ttest;
pub mod verdict;
pub mod wilcoxon;

/// Two paired samples of ten accuracies that several tests check against SciPy (each test's
/// comment gives the SciPy call and its answer).
#[cfg(test)]
mod samples {
    pub const X: [f64; 10] = [
        0.912, 0.934, 0.921, 0.945, 0.928, 0.917, 0.939, 0.925, 0.931, 0.908,
    ];
    pub const Y: [f64; 10] = [
        0.905, 0.930, 0.927, 0.931, 0.915, 0.919, 0.926, 0.9105, 0.9235, 0.909,
    ];
}

use serde::Serialize;

pub use bootstrap::bootstrap_ci;
pub use compare::{Comparison, compare, compare_by_seed};
pub use describe::{Summary, mean, median, std_dev, summarize, variance};
pub use effect::{a12, cohens_d};
pub use glm::glm_test;
pub use mann_whitney::mann_whitney_u;
pub use passk::{mean_pass_at_k, pass_at_k};
pub use tost::{Equivalence, tost};
pub use ttest::{paired_t, welch_t};
pub use verdict::{ALPHA, Goal, MIN_EFFECT, Verdict, verdict};
pub use wilcoxon::{rounded_differences, wilcoxon_one_sided, wilcoxon_signed_rank};

/// Outcome of a two-sided hypothesis test.
///
/// `method` records *how* the p-value was obtained (e.g. `"exact"` vs
/// `"normal"`) because the two can differ noticeably at the small `n`
/// typical of repeated trainings, and a report must be able to say which.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TestResult {
    /// Test statistic; its meaning is documented on each test function.
    pub statistic: f64,
    /// Two-sided p-value in `[0, 1]`.
    pub p_value: f64,
    /// How the p-value was computed: `"exact"`, `"normal"`, `"welch"`,
    /// `"paired-t"` or `"glm-wald"`.
    pub method: &'static str,
}
