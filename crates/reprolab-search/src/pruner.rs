//! Pruners, in Optuna's shape: a trial reports intermediate values step by step (an epoch of
//! its training, a rung of successive halving), and a pruner decides from what every trial
//! reported at that step whether this one goes on. BOHB prunes at its rungs with
//! [`SuccessiveHalving`]; an objective that reports per-epoch values can ask the same trait in
//! the middle of a training.
//!
//! In-training pruning ([`PercentilePruner`], Optuna's `PercentilePruner` / `MedianPruner`):
//! before a trial starts, the study computes per-epoch [`thresholds`](PercentilePruner::thresholds)
//! from the curves of the trials already finished, and the training itself (reprolab's Python
//! side, at each `log_epoch`) stops as soon as its best value so far is worse than the
//! threshold of that epoch ([`prune_at`] is the rule). Execution stays one request → one
//! outcome: nothing streams back while a training runs.

use std::cmp::Ordering;

use reprolab_core::Goal;
use serde::{Deserialize, Serialize};

/// The share of a trial's epochs [`PercentilePruner::median`] never prunes in (the first third,
/// BOHB's lower rung with `eta = 3`).
pub const WARMUP_FRACTION: f64 = 1.0 / 3.0;

/// Decides from intermediate values whether a trial stops.
pub trait Pruner {
    /// Whether trial `trial` should stop at `step`. `reported` holds the value every trial
    /// reported at `step` (`None`: its training failed), as `(trial, value)`, this trial
    /// included.
    fn prune(&self, goal: Goal, step: u64, trial: usize, reported: &[(usize, Option<f64>)])
    -> bool;
}

/// Successive halving: of the `n` trials that reported at a step, the best `max(1, n / eta)`
/// go on (failed trainings rank last, ties go to the lower trial number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuccessiveHalving {
    /// The halving rate (at least 2).
    pub eta: u64,
}

impl Pruner for SuccessiveHalving {
    fn prune(
        &self,
        goal: Goal,
        _step: u64,
        trial: usize,
        reported: &[(usize, Option<f64>)],
    ) -> bool {
        let Some(&(_, mine)) = reported.iter().find(|(t, _)| *t == trial) else {
            return false;
        };
        let keep = (reported.len() / self.eta.max(1) as usize).max(1);
        let ahead = reported
            .iter()
            .filter(|&&(t, v)| t != trial && rank(goal, v, mine).then(t.cmp(&trial)).is_lt())
            .count();
        ahead >= keep
    }
}

/// Optuna's `PercentilePruner` (with `percentile = 50`: its `MedianPruner`) as per-epoch
/// thresholds. A trial is pruned at epoch `e` when its best intermediate value so far is worse
/// than the `percentile`-th best of the values the finished trials reported at `e`, provided
///
/// * at least `n_startup_trials` trials have finished (completed: neither failed nor pruned;
///   failed and pruned trials never count, as in Optuna, which uses `COMPLETE` trials only),
/// * `e >= n_warmup_steps`,
/// * at least `n_min_trials` finished trials reported a finite value at `e`.
///
/// [`for_trial`](PercentilePruner::for_trial) adds two rules of the trial's own length (not
/// Optuna's): no pruning in the first `warmup_fraction` of the config's epochs, and none at the
/// trial's last epoch (stopping there saves nothing and throws its result away).
///
/// "Worse than the `p`-th best": for goal `max` below the `100 − p` percentile of the values,
/// for `min` above the `p` percentile (linear interpolation, numpy's default).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PercentilePruner {
    /// 50 = the median pruner; 25 keeps only trials among the best quarter.
    pub percentile: f64,
    pub n_startup_trials: usize,
    pub n_warmup_steps: u64,
    pub n_min_trials: usize,
    /// Warm-up as a share of the config's own epochs (0 to 1): a trial whose config trains `E`
    /// epochs is never pruned in its first `ceil(warmup_fraction · E)` epochs, where its curve
    /// is noisiest and a slow start says least about where it ends. 0 = Optuna's (only
    /// `n_warmup_steps`).
    #[serde(default)]
    pub warmup_fraction: f64,
}

impl PercentilePruner {
    /// Optuna's `MedianPruner()` defaults: 5 startup trials, no warm-up, 1 trial per step.
    pub fn optuna_median() -> Self {
        PercentilePruner {
            percentile: 50.0,
            n_startup_trials: 5,
            n_warmup_steps: 0,
            n_min_trials: 1,
            warmup_fraction: 0.0,
        }
    }

    /// The median pruner reprolab uses: Optuna's, with a warm-up of the first third of a
    /// trial's epochs (BOHB's lower rung: nothing is stopped before successive halving would
    /// have judged it).
    pub fn median() -> Self {
        PercentilePruner {
            warmup_fraction: WARMUP_FRACTION,
            ..PercentilePruner::optuna_median()
        }
    }

    /// The thresholds for one trial of a config that trains `full` epochs (`None`: unknown),
    /// trained for `trained` epochs (`None`: `full`; fewer for a BOHB low-fidelity trial):
    /// [`thresholds`](PercentilePruner::thresholds) without the first
    /// `ceil(warmup_fraction · full)` epochs and without the trial's last epoch.
    pub fn for_trial(
        &self,
        goal: Goal,
        curves: &[&[Option<f64>]],
        full: Option<u64>,
        trained: Option<u64>,
    ) -> Vec<Option<f64>> {
        let mut out = self.thresholds(goal, curves);
        if let Some(last) = trained.or(full) {
            out.truncate(last.saturating_sub(1) as usize);
        }
        let warm = full.map_or(0, |e| {
            (self.warmup_fraction.clamp(0.0, 1.0) * e as f64 - 1e-9).ceil() as usize
        });
        for t in out.iter_mut().take(warm) {
            *t = None;
        }
        while out.last().is_some_and(Option::is_none) {
            out.pop();
        }
        out
    }

    /// Per-epoch thresholds from the finished trials' curves (`curves[i][e]`: trial `i`'s value
    /// at epoch `e`, `None` when not finite). Only completed trials may be passed. `None` at an
    /// epoch: no pruning there. Trailing `None`s are cut.
    pub fn thresholds(&self, goal: Goal, curves: &[&[Option<f64>]]) -> Vec<Option<f64>> {
        if curves.len() < self.n_startup_trials.max(1) {
            return Vec::new();
        }
        let steps = curves.iter().map(|c| c.len()).max().unwrap_or(0);
        let q = match goal {
            Goal::Max => 100.0 - self.percentile,
            Goal::Min => self.percentile,
        }
        .clamp(0.0, 100.0);
        let mut out: Vec<Option<f64>> = (0..steps)
            .map(|e| {
                if (e as u64) < self.n_warmup_steps {
                    return None;
                }
                let mut vals: Vec<f64> = curves
                    .iter()
                    .filter_map(|c| c.get(e).copied().flatten())
                    .filter(|v| v.is_finite())
                    .collect();
                if vals.is_empty() || vals.len() < self.n_min_trials {
                    return None;
                }
                vals.sort_by(f64::total_cmp);
                Some(percentile(&vals, q))
            })
            .collect();
        while out.last().is_some_and(Option::is_none) {
            out.pop();
        }
        out
    }
}

/// The `q`-th percentile (0–100) of sorted, non-empty `v`, interpolated linearly.
fn percentile(v: &[f64], q: f64) -> f64 {
    let pos = q / 100.0 * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// The rule a training applies at each epoch (reprolab's Python side, `log_epoch`, does the
/// same): the first epoch `e` with a threshold at which the best value so far (`None` values
/// are worst) is worse than `thresholds[e]`, with that best value. `None`: it runs to the end.
pub fn prune_at(
    goal: Goal,
    thresholds: &[Option<f64>],
    curve: &[Option<f64>],
) -> Option<(usize, Option<f64>)> {
    let mut best: Option<f64> = None;
    for (e, v) in curve.iter().enumerate() {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            best = Some(best.map_or(v, |b| goal.best(b, v)));
        }
        if let Some(Some(t)) = thresholds.get(e) {
            let worse = match best {
                Some(b) => goal.better(*t, b),
                None => true,
            };
            if worse {
                return Some((e, best));
            }
        }
    }
    None
}

/// Better values first, failed trainings (`None`) last.
pub fn rank(goal: Goal, a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) if goal.better(x, y) => Ordering::Less,
        (Some(x), Some(y)) if goal.better(y, x) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().map(|x| Some(*x)).collect()
    }

    #[test]
    fn median_thresholds_follow_optuna() {
        let p = PercentilePruner {
            n_startup_trials: 3,
            ..PercentilePruner::optuna_median()
        };
        let a = c(&[0.1, 0.5, 0.7]);
        let b = c(&[0.3, 0.6, 0.8]);
        let d = c(&[0.2, 0.4]);
        // Fewer finished trials than n_startup_trials: no pruning at all.
        assert!(p.thresholds(Goal::Max, &[&a, &b]).is_empty());
        // The median of what the finished trials reported at each epoch.
        let t = p.thresholds(Goal::Max, &[&a, &b, &d]);
        assert_eq!(t.len(), 3);
        assert!((t[0].unwrap() - 0.2).abs() < 1e-12);
        assert!((t[1].unwrap() - 0.5).abs() < 1e-12);
        assert!(
            (t[2].unwrap() - 0.75).abs() < 1e-12,
            "two values: interpolated"
        );
        // The goal does not change a median…
        assert_eq!(p.thresholds(Goal::Min, &[&a, &b, &d]), t);
        // …but it does a percentile: the 25th best is the 75th percentile for max and the
        // 25th for min.
        let q = PercentilePruner {
            percentile: 25.0,
            ..p
        };
        let four = [c(&[1.0]), c(&[2.0]), c(&[3.0]), c(&[4.0])];
        let refs: Vec<&[Option<f64>]> = four.iter().map(Vec::as_slice).collect();
        assert_eq!(q.thresholds(Goal::Max, &refs), vec![Some(3.25)]);
        assert_eq!(q.thresholds(Goal::Min, &refs), vec![Some(1.75)]);
        // Warm-up steps are never pruned; n_min_trials asks for that many values at a step.
        let w = PercentilePruner {
            n_warmup_steps: 2,
            ..p
        };
        assert_eq!(w.thresholds(Goal::Max, &[&a, &b, &d])[..2], [None, None]);
        let m = PercentilePruner {
            n_min_trials: 3,
            ..p
        };
        assert_eq!(
            m.thresholds(Goal::Max, &[&a, &b, &d]),
            vec![Some(0.2), Some(0.5)],
            "epoch 2 has only two values; trailing Nones are cut"
        );
        // Non-finite values at a step are left out (a diverged epoch).
        let e = vec![Some(0.9), None, Some(f64::NAN)];
        let t = p.thresholds(Goal::Max, &[&a, &b, &e]);
        assert!((t[1].unwrap() - 0.55).abs() < 1e-12);
    }

    #[test]
    fn a_trial_is_never_pruned_in_its_warm_up_or_at_its_last_epoch() {
        let p = PercentilePruner {
            n_startup_trials: 1,
            ..PercentilePruner::median()
        };
        let done = c(&[0.5; 12]);
        let all = p.thresholds(Goal::Max, &[&done]);
        assert_eq!(all, vec![Some(0.5); 12]);
        // A config of 9 epochs: not in its first 3 (a third), not at its 9th (index 8).
        let t = p.for_trial(Goal::Max, &[&done], Some(9), None);
        assert_eq!(t, [vec![None; 3], vec![Some(0.5); 5]].concat());
        // The warm-up rounds up (10 epochs: 4), a BOHB trial of 4 of its 12 epochs is never
        // pruned (its 4 are the warm-up), and without known epochs only the curve's own length
        // bounds it.
        assert_eq!(
            p.for_trial(Goal::Max, &[&done], Some(10), None)[..4],
            [None; 4]
        );
        assert!(
            p.for_trial(Goal::Max, &[&done], Some(12), Some(4))
                .is_empty()
        );
        assert_eq!(p.for_trial(Goal::Max, &[&done], None, None), all);
        // Optuna's median has no warm-up; the last epoch is still left alone.
        let o = PercentilePruner {
            n_startup_trials: 1,
            ..PercentilePruner::optuna_median()
        };
        assert_eq!(
            o.for_trial(Goal::Max, &[&done], Some(9), None),
            vec![Some(0.5); 8]
        );
        // A curve that would be pruned at epoch 1 without the warm-up runs on to epoch 3.
        let slow = c(&[0.1, 0.2, 0.3, 0.4, 0.45, 0.6, 0.7, 0.8, 0.9]);
        assert_eq!(prune_at(Goal::Max, &all, &slow), Some((0, Some(0.1))));
        let t = p.for_trial(Goal::Max, &[&done], Some(9), None);
        assert_eq!(prune_at(Goal::Max, &t, &slow), Some((3, Some(0.4))));
        assert_eq!(prune_at(Goal::Max, &t, &c(&[0.1, 0.2, 0.5, 0.9])), None);
    }

    #[test]
    fn a_curve_is_pruned_where_its_best_falls_behind() {
        let t = vec![None, Some(0.5), Some(0.7)];
        // Max: best so far 0.6 at epoch 1 ≥ 0.5, 0.6 < 0.7 at epoch 2.
        assert_eq!(
            prune_at(Goal::Max, &t, &c(&[0.2, 0.6, 0.4])),
            Some((2, Some(0.6)))
        );
        // The best so far counts, not the last value (Optuna's rule).
        assert_eq!(prune_at(Goal::Max, &t, &c(&[0.9, 0.1, 0.1])), None);
        assert_eq!(prune_at(Goal::Max, &t, &c(&[0.1, 0.6, 0.8])), None);
        // A curve with no finite value yet at a checked epoch is pruned.
        assert_eq!(prune_at(Goal::Max, &t, &[None, None]), Some((1, None)));
        // Min: larger is worse.
        let t = vec![Some(10.0), Some(5.0)];
        assert_eq!(
            prune_at(Goal::Min, &t, &c(&[8.0, 6.0])),
            Some((1, Some(6.0)))
        );
        assert_eq!(prune_at(Goal::Min, &t, &c(&[8.0, 5.0])), None);
        // No thresholds: never.
        assert_eq!(prune_at(Goal::Max, &[], &c(&[0.0])), None);
    }

    fn survivors(p: &impl Pruner, goal: Goal, reported: &[(usize, Option<f64>)]) -> Vec<usize> {
        reported
            .iter()
            .map(|(t, _)| *t)
            .filter(|&t| !p.prune(goal, 0, t, reported))
            .collect()
    }

    #[test]
    fn successive_halving_keeps_the_best_third() {
        let sh = SuccessiveHalving { eta: 3 };
        let r = [
            (0, Some(0.5)),
            (1, Some(0.9)),
            (2, None),
            (3, Some(0.7)),
            (4, Some(0.2)),
            (5, Some(0.8)),
        ];
        assert_eq!(survivors(&sh, Goal::Max, &r), vec![1, 5]);
        assert_eq!(survivors(&sh, Goal::Min, &r), vec![0, 4]);
        // At least one goes on; failed trainings last; ties to the lower trial number.
        assert_eq!(
            survivors(&sh, Goal::Max, &[(7, None), (3, Some(0.1))]),
            vec![3]
        );
        assert_eq!(
            survivors(&sh, Goal::Max, &[(7, Some(0.4)), (3, Some(0.4))]),
            vec![3]
        );
        assert_eq!(survivors(&sh, Goal::Max, &[(4, None), (2, None)]), vec![2]);
        // A trial that reported nothing at the step is not pruned by it.
        assert!(!sh.prune(Goal::Max, 0, 9, &r));
    }
}
