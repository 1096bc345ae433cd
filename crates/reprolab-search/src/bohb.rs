//! BOHB (Falkner et al. 2018): Hyperband brackets of successive halving with the number of
//! epochs as fidelity, and configs proposed by a TPE fitted on the highest fidelity that has
//! enough observations (random before, and for a fixed fraction of proposals).
//!
//! With `eta = 3` and a smallest fidelity of 1/9 of a candidate's own epochs `E` (at least 1
//! epoch), the rungs train `max(1, round(E/9))`, `max(1, round(E/3))` and `E` epochs; a fidelity
//! that rounds to `E` or more is a full training. Brackets cycle `s = 2, 1, 0`: bracket `s`
//! starts `ceil(3/(s+1) · 3^s)` configs (9, 5, 3) at rung `2 − s` and promotes the best third
//! (at least one) to the next rung, until the full rung. A promoted config is retrained from
//! scratch at the higher fidelity; one whose fidelity does not change reuses its result. The
//! budget is counted as in the study loop (sum of durations), so cheap low-fidelity trials are
//! what makes BOHB efficient; `best` considers full-fidelity trials only.

use reprolab_core::{Config, Subject};
use serde::{Deserialize, Serialize};

use reprolab_rng::Rng;

use crate::budget::SearchSettings;
use crate::confirm::{FINALISTS, confirm, finalists};
use crate::pruner::{Pruner, SuccessiveHalving, rank};
use crate::sampler::Sampler;
use crate::space::{
    EPOCHS_KEY, apply_patch, count_at, perturb_config_weighted, sample_config_scaled,
};
use crate::study::{SearchResult, Stop, Study};
use crate::tpe::TpeSampler;
use crate::{Objective, SearchError, Trial};

/// BOHB's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BohbOptions {
    /// Halving rate (default 3).
    pub eta: u64,
    /// Number of rungs below the full one (default 1: fidelities E/3, E; 2 gives the paper's
    /// E/9, E/3, E). Measured on the bundled benchmark (13 faults, 2 repeats, 10x budget):
    /// median IR 0.92 with 1 rung against 0.70 with 2, because a real training has a fixed
    /// cost (fork, data, model) that does not shrink with epochs, so E/9 trials cost far more
    /// than 1/9 of a full one. The synthetic tests, whose cost is exactly proportional to
    /// epochs, use 2.
    pub s_max: u32,
    /// Fraction of proposals drawn at random even when a model exists (default 0.2; the BOHB
    /// paper uses 1/3, which explores too much for budgets of a few dozen trainings).
    pub random_fraction: f64,
    /// Fraction of the non-model proposals drawn near the faulty config (a few of its
    /// hyperparameters redrawn, see [`perturb_config`]) rather than over the whole space
    /// (default 0.5).
    pub local_fraction: f64,
    /// Mean number of hyperparameters such a proposal redraws (default 2).
    pub local_changes: f64,
    /// Observations a fidelity needs before its TPE is used (default 6). The BOHB paper needs
    /// `d + 1` for its multivariate KDE; the independent per-parameter TPE does not, and with
    /// 9 configs in the first bracket a model is then available from the second bracket on.
    pub min_points: usize,
    /// The config key holding the number of epochs (default `epochs`). Candidates without an
    /// integer value there are always trained fully.
    pub fidelity_key: String,
    /// Share of the budget kept for re-training the best few configs with fresh seeds
    /// ([`crate::confirm`]): once the search has spent the rest and found at least two configs
    /// better than the faulty one, it stops and the race among them picks the patch by mean.
    /// A search that has found fewer goes on to the end of the budget. 0 turns it off.
    pub confirm_share: f64,
    /// How likely each hyperparameter is to be at fault (by name; one not named weighs 1): the
    /// parameters a proposal near the faulty config redraws are picked in proportion. Empty
    /// (the default): all alike. The repair engine fills it from localisation's suspects.
    pub prior: Vec<(String, f64)>,
    /// Configs proposed first, in order, before any drawn one (Optuna's `enqueue_trial`); they
    /// enter the brackets like any other. The repair engine fills it with localisation's
    /// suggested changes.
    pub enqueued: Vec<Config>,
}

impl Default for BohbOptions {
    fn default() -> Self {
        BohbOptions {
            eta: 3,
            s_max: 1,
            random_fraction: 0.2,
            local_fraction: 0.5,
            local_changes: 2.0,
            min_points: 6,
            fidelity_key: EPOCHS_KEY.into(),
            confirm_share: 0.2,
            prior: Vec::new(),
            enqueued: Vec::new(),
        }
    }
}

impl BohbOptions {
    /// The epochs of rung `r` for a candidate of `full` epochs (`None` = full training).
    pub fn fidelity(&self, full: Option<u64>, r: u32) -> Option<u64> {
        let e_full = full?;
        let div = (self.eta as f64).powi((self.s_max - r.min(self.s_max)) as i32);
        let e = ((e_full as f64 / div).round() as u64).max(1);
        (e < e_full).then_some(e)
    }

    /// Configs started by bracket `s`: `ceil((s_max + 1) / (s + 1) · eta^s)`.
    pub fn bracket_size(&self, s: u32) -> usize {
        let n = (self.s_max + 1) as f64 / (s + 1) as f64 * (self.eta as f64).powi(s as i32);
        (n - 1e-9).ceil() as usize
    }
}

struct Candidate {
    config: Config,
    full: Option<u64>,
    /// `(fidelity, value)` of its trainings so far.
    results: Vec<(Option<u64>, Option<f64>)>,
}

impl Candidate {
    fn value_at(&self, fidelity: Option<u64>) -> Option<Option<f64>> {
        self.results
            .iter()
            .find(|(f, _)| *f == fidelity)
            .map(|(_, v)| *v)
    }
}

/// BOHB with the default [`BohbOptions`].
pub async fn bohb<O: Objective>(
    obj: &O,
    subject: &Subject,
    s: &SearchSettings,
) -> Result<SearchResult, SearchError> {
    bohb_with(obj, subject, s, &BohbOptions::default()).await
}

/// BOHB with explicit options.
pub async fn bohb_with<O: Objective>(
    obj: &O,
    subject: &Subject,
    s: &SearchSettings,
    opt: &BohbOptions,
) -> Result<SearchResult, SearchError> {
    if opt.eta < 2 {
        return Err(SearchError::Settings(format!(
            "eta = {}: expected at least 2",
            opt.eta
        )));
    }
    if !(0.0..1.0).contains(&opt.confirm_share) {
        return Err(SearchError::Settings(format!(
            "confirm_share = {}: expected at least 0 and below 1",
            opt.confirm_share
        )));
    }
    let goal = subject.metric.goal;
    let top = opt.s_max;
    let pruner = SuccessiveHalving { eta: opt.eta };
    let mut study = Study::start(obj, subject, s).await?;
    let t0 = study.trials()[0].clone();
    let mut stop = study.reached(&t0).then_some(Stop::StopAt);
    // Trials per fidelity rung, for the models (full trainings in the top rung).
    let mut by_rung: Vec<Vec<Trial>> = vec![Vec::new(); top as usize + 1];
    by_rung[top as usize].push(t0);
    let mut rng = Rng::new(s.seed ^ 0xB0B0_0000_0000_0001);
    let mut tpe = TpeSampler::new(s.seed ^ 0x7E7E_0000_0000_0002, goal);
    tpe.n_startup = 1;
    let mut enqueued = opt.enqueued.iter();
    let mut bracket = 0u32;
    'brackets: while stop.is_none() {
        let sb = top - bracket % (top + 1);
        bracket += 1;
        let mut cands: Vec<Candidate> = (0..opt.bracket_size(sb))
            .map(|_| {
                let config = match enqueued.next() {
                    Some(first) => first.clone(),
                    None => {
                        let asked = propose(&mut rng, &mut tpe, subject, &by_rung, opt);
                        apply_patch(&subject.config, &asked)
                    }
                };
                let full = count_at(&config, &opt.fidelity_key);
                Candidate {
                    config,
                    full,
                    results: Vec::new(),
                }
            })
            .collect();
        let mut active: Vec<usize> = (0..cands.len()).collect();
        for r in (top - sb)..=top {
            let todo: Vec<usize> = active
                .iter()
                .copied()
                .filter(|&c| cands[c].value_at(opt.fidelity(cands[c].full, r)).is_none())
                .collect();
            // `parallel` at a time, fewer when the time left holds fewer (Meter::allowance).
            let mut next = 0;
            while next < todo.len() {
                if confirmation_due(&study, subject, opt) {
                    stop = Some(Stop::Budget);
                    break 'brackets;
                }
                let k = study.allowance(s.parallel.min(todo.len() - next));
                if k == 0 {
                    stop = Some(Stop::Budget);
                    break 'brackets;
                }
                let chunk = &todo[next..next + k];
                next += k;
                let items: Vec<(Config, Option<u64>)> = chunk
                    .iter()
                    .map(|&c| (cands[c].config.clone(), opt.fidelity(cands[c].full, r)))
                    .collect();
                for (&c, t) in chunk.iter().zip(study.evaluate(obj, items).await?) {
                    cands[c].results.push((t.epochs, t.value));
                    let rung = if t.is_full() { top } else { r };
                    by_rung[rung as usize].push(t.clone());
                    if study.tell(t) {
                        stop = Some(Stop::StopAt);
                    }
                }
                if stop.is_some() {
                    break 'brackets;
                }
            }
            if r == top {
                break;
            }
            // Successive halving: the best 1/eta (at least one) go up a rung, best first.
            let value = |c: usize| cands[c].value_at(opt.fidelity(cands[c].full, r)).flatten();
            active.sort_by(|&a, &b| rank(goal, value(a), value(b)).then(a.cmp(&b)));
            let reported: Vec<(usize, Option<f64>)> =
                active.iter().map(|&c| (c, value(c))).collect();
            active.retain(|&c| !pruner.prune(goal, r.into(), c, &reported));
        }
    }
    let left = study.budget_left();
    let time_ref_s = study.time_reference_s();
    let stop = stop.unwrap_or(Stop::Budget);
    let found = study.finish("bohb", stop);
    // A trial that reached the target ends the search as asked: nothing to choose.
    if opt.confirm_share == 0.0 || left.is_empty() || stop == Stop::StopAt {
        return Ok(found);
    }
    confirm(obj, subject, found, left, time_ref_s, s).await
}

/// Whether the search should stop and leave the rest of the budget to [`confirm`]: it has
/// spent all but `confirm_share` and found at least two configs to choose between.
fn confirmation_due(study: &Study<'_>, subject: &Subject, opt: &BohbOptions) -> bool {
    opt.confirm_share > 0.0
        && study.spent_fraction() >= 1.0 - opt.confirm_share
        && finalists(subject, study.trials(), FINALISTS).len() >= 2
}

/// A new config: random for `random_fraction` of the proposals and while no rung has
/// `min_points` observations with at least one success; otherwise the TPE fitted on the highest
/// such rung. A random proposal is near the faulty config for `local_fraction` of them, drawn
/// over the whole space otherwise, from the TPE's prior (wide floats log-uniformly).
fn propose(
    rng: &mut Rng,
    tpe: &mut TpeSampler,
    subject: &Subject,
    by_rung: &[Vec<Trial>],
    opt: &BohbOptions,
) -> Config {
    let model = by_rung
        .iter()
        .rev()
        .find(|ts| ts.len() >= opt.min_points.max(1) && ts.iter().any(|t| t.value.is_some()));
    match model {
        Some(ts) if rng.f64() >= opt.random_fraction => tpe.ask(&subject.space, ts),
        _ if rng.f64() < opt.local_fraction => perturb_config_weighted(
            &subject.config,
            &subject.space,
            rng,
            opt.local_changes,
            &opt.prior,
        ),
        _ => sample_config_scaled(&subject.space, rng),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rungs_and_brackets() {
        let o = BohbOptions {
            s_max: 2,
            ..BohbOptions::default()
        };
        assert_eq!(
            (0..3).map(|r| o.fidelity(Some(27), r)).collect::<Vec<_>>(),
            vec![Some(3), Some(9), None]
        );
        assert_eq!(
            (0..3).map(|r| o.fidelity(Some(5), r)).collect::<Vec<_>>(),
            vec![Some(1), Some(2), None]
        );
        assert_eq!(o.fidelity(Some(1), 0), None);
        assert_eq!(o.fidelity(None, 0), None);
        assert_eq!(
            (0..3).rev().map(|s| o.bracket_size(s)).collect::<Vec<_>>(),
            vec![9, 5, 3]
        );
        let c: Config =
            serde_json::from_value(json!({"epochs": 12, "e2": 3.0, "e3": "x"})).unwrap();
        assert_eq!(count_at(&c, "epochs"), Some(12));
        assert_eq!(count_at(&c, "e2"), Some(3));
        assert_eq!(count_at(&c, "e3"), None);
        assert_eq!(count_at(&c, "missing"), None);
    }
}
