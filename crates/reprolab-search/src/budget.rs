//! Search budgets and the meter that spends them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::SearchError;
use crate::pruner::PercentilePruner;

/// How much a search may train.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// At most this many trials, the faulty config's trial 0 included.
    Trials(usize),
    /// This multiple of a reference training time (the study's 10×, 20×, 50×), counted as the
    /// SUM of the trials' training durations (not wall time: parallel workers do not change
    /// what the search sees). The faulty trial counts too. The reference is
    /// [`SearchSettings::time_ref_s`], by default trial 0's duration; a repair sets it to the
    /// larger of the faulty config's and the subject's default config's mean training time, so
    /// that `m×` buys at least `m` full trainings of the default config (a floor that keeps a
    /// fault whose own training is short from being starved).
    TimeMultiple(f64),
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Trials(n) => write!(f, "{n} trials"),
            Budget::TimeMultiple(m) => write!(f, "{m}x"),
        }
    }
}

impl FromStr for Budget {
    type Err = String;

    /// `20x` (or `20×`, `20X`): a time multiple; a plain integer `50`: a number of trials.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bad = || {
            format!(
                "budget {t:?}: expected a time multiple like \"20x\" or a number of trials like \"50\""
            )
        };
        if let Some(m) = t
            .strip_suffix('x')
            .or_else(|| t.strip_suffix('X'))
            .or_else(|| t.strip_suffix('×'))
        {
            let m: f64 = m.trim().parse().map_err(|_| bad())?;
            let b = Budget::TimeMultiple(m);
            b.check().map_err(|e| e.to_string())?;
            return Ok(b);
        }
        let n: usize = t.parse().map_err(|_| bad())?;
        let b = Budget::Trials(n);
        b.check().map_err(|e| e.to_string())?;
        Ok(b)
    }
}

impl Budget {
    /// Whether it buys nothing: no trial, or a multiple of zero (what a phase of a search gets
    /// when the phases before it spent everything).
    pub fn is_empty(&self) -> bool {
        match self {
            Budget::Trials(n) => *n == 0,
            Budget::TimeMultiple(m) => *m <= 0.0,
        }
    }

    fn check(&self) -> Result<(), SearchError> {
        match self {
            Budget::Trials(0) => Err(SearchError::Settings(
                "a budget of 0 trials leaves nothing to search".into(),
            )),
            Budget::TimeMultiple(m) if !(m.is_finite() && *m > 0.0) => Err(SearchError::Settings(
                format!("time multiple {m}: expected a positive number"),
            )),
            _ => Ok(()),
        }
    }
}

/// Settings shared by every engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    pub budget: Budget,
    /// Seeds the search's randomness, and the trainings: trial `i` trains with seed
    /// `seed * 1000 + i`.
    pub seed: u64,
    /// Stop early when a full-fidelity trial reaches this value (goal-aware: `>=` for `max`,
    /// `<=` for `min`), e.g. accuracy 0.99 as in the study.
    pub stop_at: Option<f64>,
    /// Trials asked, and trained, at once (workers). At least 1.
    pub parallel: usize,
    /// The training time in seconds that [`Budget::TimeMultiple`] multiplies; `None`: the
    /// duration of trial 0 (the faulty config's search training). A repair passes the larger
    /// of the faulty config's and the default config's mean training time (the budget's floor).
    pub time_ref_s: Option<f64>,
    /// In-training pruning: trials stop early when their per-epoch values fall behind the
    /// finished trials' (see [`PercentilePruner`]); `None`: every trial trains to its end.
    /// Applied by every engine that trains through [`Study::evaluate`](crate::Study::evaluate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<PercentilePruner>,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            budget: Budget::TimeMultiple(20.0),
            seed: 0,
            stop_at: None,
            parallel: 1,
            time_ref_s: None,
            prune: None,
        }
    }
}

impl SearchSettings {
    /// Checks the settings.
    pub fn check(&self) -> Result<(), SearchError> {
        self.budget.check()?;
        if self.parallel == 0 {
            return Err(SearchError::Settings(
                "parallel = 0: expected at least 1 worker".into(),
            ));
        }
        if let Some(t) = self.time_ref_s
            && !(t.is_finite() && t > 0.0)
        {
            return Err(SearchError::Settings(format!(
                "time_ref_s = {t}: expected a positive number of seconds"
            )));
        }
        if let Some(p) = &self.prune
            && !(p.percentile.is_finite() && (0.0..=100.0).contains(&p.percentile))
        {
            return Err(SearchError::Settings(format!(
                "pruner percentile {}: expected 0 to 100",
                p.percentile
            )));
        }
        if self.stop_at.is_some_and(|x| !x.is_finite()) {
            return Err(SearchError::Settings(
                "stop_at must be a finite number".into(),
            ));
        }
        Ok(())
    }
}

/// A time budget stops after this many trials whatever the durations say (a guard against an
/// objective that reports zero durations).
pub const MAX_TIME_TRIALS: usize = 1000;

/// Spends a budget: counts trials and the sum of their durations.
#[derive(Debug, Clone, PartialEq)]
pub struct Meter {
    budget: Budget,
    /// Seconds the time budget allows (set from the reference for a time multiple).
    pub limit_s: Option<f64>,
    pub spent_s: f64,
    pub trials: usize,
    /// The longest training seen so far (trials, charged trainings and the reference): what
    /// the next trial is expected to cost at most.
    pub longest_s: f64,
}

impl Meter {
    pub fn new(budget: Budget) -> Self {
        Meter {
            budget,
            limit_s: None,
            spent_s: 0.0,
            trials: 0,
            longest_s: 0.0,
        }
    }

    /// Records one trial of `duration_s` seconds.
    pub fn spend(&mut self, duration_s: f64) {
        self.trials += 1;
        self.charge(duration_s);
    }

    /// Charges `duration_s` seconds of training that is not a trial (a rules engine's trace).
    pub fn charge(&mut self, duration_s: f64) {
        if duration_s.is_finite() && duration_s > 0.0 {
            self.spent_s += duration_s;
            self.longest_s = self.longest_s.max(duration_s);
        }
    }

    /// Seconds left of a time budget (`None` for a trial budget or before the reference).
    pub fn left_s(&self) -> Option<f64> {
        self.limit_s.map(|l| l - self.spent_s)
    }

    /// Sets the time limit from the faulty config's mean training time (called after trial 0).
    pub fn set_reference(&mut self, faulty_s: f64) -> Result<(), SearchError> {
        if let Budget::TimeMultiple(m) = self.budget {
            if !(faulty_s.is_finite() && faulty_s > 0.0) {
                return Err(SearchError::Settings(format!(
                    "a time budget needs the faulty config's training time, but it took {faulty_s} s; \
                     give time_ref_s or a number of trials"
                )));
            }
            self.limit_s = Some(m * faulty_s);
            self.longest_s = self.longest_s.max(faulty_s);
        }
        Ok(())
    }

    /// How many more trials may start now. A trial that starts within a time budget is
    /// finished (as in the study), so the budget may be overshot, but by less than one trial:
    /// trials start only while time is left, and a batch of `k` only when
    /// `k ≤ ceil(left / longest)`, where `longest` is the longest training seen so far (the
    /// reference included). A batch whose trials are no longer than that costs less than
    /// `left + longest`; with one worker the overshoot is always less than the last trial.
    pub fn allowance(&self, want: usize) -> usize {
        match self.budget {
            Budget::Trials(n) => want.min(n.saturating_sub(self.trials)),
            Budget::TimeMultiple(_) => match self.left_s() {
                _ if self.trials >= MAX_TIME_TRIALS => 0,
                Some(left) if left > 0.0 => {
                    let fit = if self.longest_s > 0.0 {
                        // `as` saturates: a huge quotient is simply "all of them".
                        ((left / self.longest_s).ceil() as usize).max(1)
                    } else {
                        usize::MAX
                    };
                    want.min(fit).min(MAX_TIME_TRIALS - self.trials)
                }
                Some(_) => 0,
                None => want,
            },
        }
    }

    pub fn exhausted(&self) -> bool {
        self.allowance(1) == 0
    }

    /// The share of the budget spent: trials of a trial budget, seconds of a time budget (0
    /// before the reference is set).
    pub fn spent_fraction(&self) -> f64 {
        match (self.budget, self.limit_s) {
            (Budget::Trials(n), _) => self.trials as f64 / n.max(1) as f64,
            (Budget::TimeMultiple(_), Some(limit)) if limit > 0.0 => self.spent_s / limit,
            (Budget::TimeMultiple(_), _) => 0.0,
        }
    }

    /// Seconds one unit of a time budget stands for (0 for a trial budget or before the
    /// reference is set).
    pub fn reference_s(&self) -> f64 {
        match (self.budget, self.limit_s) {
            (Budget::TimeMultiple(m), Some(limit)) if m > 0.0 => limit / m,
            _ => 0.0,
        }
    }

    /// What is left of the budget, in its own units: trials, or a multiple of the reference.
    pub fn left(&self) -> Budget {
        match self.budget {
            Budget::Trials(n) => Budget::Trials(n.saturating_sub(self.trials)),
            Budget::TimeMultiple(_) => {
                let reference = self.reference_s();
                let left = self.left_s().unwrap_or(0.0).max(0.0);
                Budget::TimeMultiple(if reference > 0.0 {
                    left / reference
                } else {
                    0.0
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse() {
        assert_eq!("20x".parse::<Budget>().unwrap(), Budget::TimeMultiple(20.0));
        assert_eq!(
            " 2.5× ".parse::<Budget>().unwrap(),
            Budget::TimeMultiple(2.5)
        );
        assert_eq!("50".parse::<Budget>().unwrap(), Budget::Trials(50));
        for bad in ["0", "0x", "-1x", "x", "abc", "1.5"] {
            assert!(bad.parse::<Budget>().is_err(), "{bad}");
        }
        assert_eq!(Budget::TimeMultiple(10.0).to_string(), "10x");
    }

    #[test]
    fn meter_counts_trials_and_time() {
        let mut m = Meter::new(Budget::Trials(3));
        assert_eq!(m.allowance(5), 3);
        m.spend(1.0);
        m.spend(f64::NAN);
        assert_eq!(m.allowance(5), 1);
        assert_eq!(m.spent_s, 1.0);
        m.spend(1.0);
        assert!(m.exhausted());

        let mut t = Meter::new(Budget::TimeMultiple(2.0));
        t.spend(1.5);
        t.set_reference(1.5).unwrap();
        assert_eq!(t.limit_s, Some(3.0));
        // 1.5 s left and trainings of 1.5 s: one more trial may start, not four.
        assert_eq!(t.allowance(4), 1);
        t.spend(1.0);
        assert!(!t.exhausted());
        t.spend(0.5);
        assert!(t.exhausted());

        // A batch is cut to what the time left may hold: ceil(left / longest) trials.
        let mut b = Meter::new(Budget::TimeMultiple(10.0));
        b.spend(1.0);
        b.set_reference(1.0).unwrap();
        assert_eq!(b.allowance(4), 4);
        assert_eq!(b.allowance(20), 9);
        b.spend(2.0); // the longest training so far: 2 s
        assert_eq!(b.left_s(), Some(7.0));
        assert_eq!(b.allowance(20), 4);
        b.charge(6.5); // a trace
        assert_eq!(b.allowance(20), 1, "0.5 s left: one trial, the last");
        b.spend(1.0);
        assert!(b.exhausted());
        assert!(
            Meter::new(Budget::TimeMultiple(2.0))
                .set_reference(0.0)
                .is_err()
        );
    }
}
