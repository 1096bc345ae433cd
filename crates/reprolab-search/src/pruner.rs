//! Pruners, in Optuna's shape: a trial reports intermediate values step by step (an epoch of
//! its training, a rung of successive halving), and a pruner decides from what every trial
//! reported at that step whether this one goes on. BOHB prunes at its rungs with
//! [`SuccessiveHalving`]; an objective that reports per-epoch values can ask the same trait in
//! the middle of a training.

use std::cmp::Ordering;

use reprolab_core::Goal;

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
