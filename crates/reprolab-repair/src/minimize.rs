//! Patch minimisation by delta debugging (Zeller & Hildebrandt's ddmin) over the set of
//! hyperparameters a patch changes. A subset "passes" when the faulty config with just those
//! changes is significantly better than the faulty config AND not significantly worse than the
//! full patch (each: paired Wilcoxon p < 0.05 and |Cohen's d| ≥ 0.5), with `runs` trainings
//! (seeds `0..runs`) on the SEARCH split, so the holdout stays independent for validation. The
//! result is 1-minimal: removing any single remaining change makes it fail.

use std::collections::BTreeMap;

use reprolab_core::{Config, Split, Subject};
use serde::{Deserialize, Serialize};

use reprolab_core::fnum;
use reprolab_search::Objective;

use crate::RepairError;
use crate::metrics::patch_diff;
use crate::validate::{Group, checked_patch, compare, significantly};

/// One subset tested.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DdTest {
    /// The changed hyperparameters kept, in config order.
    pub subset: Vec<String>,
    #[serde(with = "fnum::float")]
    pub mean: f64,
    #[serde(with = "fnum::float")]
    pub p_vs_faulty: f64,
    #[serde(with = "fnum::float")]
    pub d_vs_faulty: f64,
    #[serde(with = "fnum::float")]
    pub p_vs_patch: f64,
    #[serde(with = "fnum::float")]
    pub d_vs_patch: f64,
    pub passed: bool,
}

/// The minimised patch and how it was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Minimized {
    /// The full config with only the kept changes.
    pub patch: Config,
    /// The kept changes, in config order.
    pub changed: Vec<String>,
    /// The changes of the patch given.
    pub original: Vec<String>,
    /// Every distinct subset tested, in order; the full patch first.
    pub tests: Vec<DdTest>,
    /// Trainings asked of the objective (`runs` per distinct config).
    pub trainings: usize,
    /// Whether the result is 1-minimal (false only when the full patch itself fails).
    pub one_minimal: bool,
    /// Why nothing was minimised, when so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub runs: usize,
}

struct Tester<'a, O: Objective> {
    obj: &'a O,
    subject: &'a Subject,
    patch: &'a Config,
    keys: &'a [String],
    seeds: Vec<u64>,
    faulty: Group,
    full: Option<Group>,
    memo: BTreeMap<Vec<usize>, bool>,
    tests: Vec<DdTest>,
    trainings: usize,
}

impl<O: Objective> Tester<'_, O> {
    fn config(&self, subset: &[usize]) -> Config {
        let mut c = self.subject.config.clone();
        for &i in subset {
            let k = &self.keys[i];
            if let Some(v) = self.patch.get(k) {
                c.insert(k.clone(), v.clone());
            }
        }
        c
    }

    async fn group(&mut self, config: &Config) -> Result<Group, RepairError> {
        let runs = self
            .obj
            .evaluate(config, &self.seeds, Split::Search, None)
            .await
            .map_err(RepairError::Objective)?;
        if runs.len() != self.seeds.len() {
            return Err(RepairError::Objective(format!(
                "the objective returned {} results for {} seeds",
                runs.len(),
                self.seeds.len()
            )));
        }
        self.trainings += runs.len();
        Ok(Group::from_runs(&runs))
    }

    async fn test(&mut self, subset: &[usize]) -> Result<bool, RepairError> {
        let mut key = subset.to_vec();
        key.sort_unstable();
        if let Some(&passed) = self.memo.get(&key) {
            return Ok(passed);
        }
        let goal = self.subject.metric.goal;
        let g = if key.len() == self.keys.len() && self.full.is_some() {
            self.full.clone().expect("checked")
        } else {
            let c = self.config(&key);
            self.group(&c).await?
        };
        let (pf, df) = compare(&self.faulty, &g);
        let (pp, dp) = match &self.full {
            Some(full) => compare(full, &g),
            None => (1.0, 0.0),
        };
        let passed = significantly(pf, df, goal, true) && !significantly(pp, dp, goal, false);
        self.tests.push(DdTest {
            subset: key.iter().map(|&i| self.keys[i].clone()).collect(),
            mean: g.mean,
            p_vs_faulty: pf,
            d_vs_faulty: df,
            p_vs_patch: pp,
            d_vs_patch: dp,
            passed,
        });
        if self.full.is_none() && key.len() == self.keys.len() {
            self.full = Some(g);
        }
        self.memo.insert(key, passed);
        Ok(passed)
    }
}

/// Splits `c` into `n` contiguous parts of near-equal size.
fn split(c: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.clamp(1, c.len().max(1));
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let end = start + (c.len() - start) / (n - i);
        out.push(c[start..end].to_vec());
        start = end;
    }
    out
}

/// Minimises `patch` (full config or just the changed keys) with ddmin; see the module docs.
pub async fn minimize<O: Objective>(
    obj: &O,
    subject: &Subject,
    patch: &Config,
    runs: usize,
) -> Result<Minimized, RepairError> {
    if runs < 2 {
        return Err(RepairError::Settings(format!(
            "runs = {runs}: minimisation needs at least 2 trainings per config"
        )));
    }
    let patch = checked_patch(subject, patch)?;
    let keys: Vec<String> = patch_diff(&subject.config, &patch)
        .into_iter()
        .map(|(k, _, _)| k)
        .collect();
    let seeds: Vec<u64> = (0..runs as u64).collect();
    let mut t = Tester {
        obj,
        subject,
        patch: &patch,
        keys: &keys,
        seeds,
        faulty: Group::from_runs(&[]),
        full: None,
        memo: BTreeMap::new(),
        tests: Vec::new(),
        trainings: 0,
    };
    let done = |t: Tester<'_, O>, c: &[usize], one_minimal: bool, note: Option<String>| Minimized {
        patch: t.config(c),
        changed: c.iter().map(|&i| keys[i].clone()).collect(),
        original: keys.clone(),
        tests: t.tests,
        trainings: t.trainings,
        one_minimal,
        note,
        runs,
    };
    let all: Vec<usize> = (0..keys.len()).collect();
    if keys.is_empty() {
        return Ok(done(
            t,
            &all,
            true,
            Some("the patch changes nothing".into()),
        ));
    }
    t.faulty = t.group(&subject.config).await?;
    if !t.test(&all).await? {
        let note = "the patch is not significantly better than the faulty config on the search \
                    split; kept as is"
            .to_string();
        return Ok(done(t, &all, false, Some(note)));
    }
    // ddmin. The empty set is the faulty config, which never passes, so a single change left
    // is 1-minimal.
    let mut c = all;
    let mut n = 2usize;
    while c.len() >= 2 {
        let parts = split(&c, n);
        let mut next: Option<(Vec<usize>, usize)> = None;
        for part in &parts {
            if t.test(part).await? {
                next = Some((part.clone(), 2));
                break;
            }
        }
        if next.is_none() && n > 2 {
            for part in &parts {
                let comp: Vec<usize> = c.iter().copied().filter(|i| !part.contains(i)).collect();
                if t.test(&comp).await? {
                    next = Some((comp, (n - 1).max(2)));
                    break;
                }
            }
        }
        match next {
            Some((nc, nn)) => {
                c = nc;
                n = nn;
            }
            None if n < c.len() => n = (2 * n).min(c.len()),
            None => break,
        }
    }
    Ok(done(t, &c, true, None))
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn split_is_contiguous_and_balanced() {
        assert_eq!(split(&[0, 1, 2, 3, 4], 2), vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(split(&[0, 1, 2], 3), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(split(&[0, 1], 5), vec![vec![0], vec![1]]);
    }
}
