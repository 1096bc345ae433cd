//! From per-sample results to the benchmark's numbers: unbiased pass@k (k ∈ {1, 5, 10} where
//! every task has n ≥ k), the partial pass rate, Deep-Bench's tables by stage, task and data
//! type, status counts with timeouts and infrastructure errors apart, the failure taxonomy's
//! distribution (appendix F; an LLM classifier's label where it gave one, with how many labels
//! it changed) and the harness's own cost per sample.
//!
//! Tasks whose reference solution does not pass are left out of every aggregate and listed
//! with the reason (Deep-Bench's maintainers found 213 of 490 references failing their own
//! harness); samples with infrastructure errors are left out of n, since they say nothing about
//! the code.

use std::collections::{BTreeMap, HashMap};

use reprolab_stats::pass_at_k;
use serde::Serialize;

use crate::outcome::{Role, SampleResult, Status};
use crate::refine::Verdict;
use crate::task::{DataType, LabelValue, Labels, Stage, TaskType};
use crate::taxonomy::{Category, Subtype};

/// The k of pass@k that reports consider.
pub const KS: [u64; 3] = [1, 5, 10];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassAt {
    pub k: u64,
    pub value: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    pub task_id: String,
    pub labels: Labels,
    /// Samples that ran (infrastructure errors excluded) and samples that passed.
    pub n: u64,
    pub c: u64,
    pub pass_at: Vec<PassAt>,
    pub partial: f64,
    pub statuses: BTreeMap<Status, u64>,
}

/// pass@k of a group: `None` when the group has no task. The same `{k, value}` shape as
/// [`PassAt`], so that every pass@k in `summary.json` reads alike.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GroupPassAt {
    pub k: u64,
    pub value: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupRow {
    pub name: String,
    pub title: String,
    pub tasks: usize,
    pub samples: u64,
    /// One entry per reported k.
    pub pass_at: Vec<GroupPassAt>,
    pub partial: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaxonomyRow {
    pub category: Category,
    pub category_title: String,
    pub subtype: Subtype,
    pub subtype_title: String,
    pub count: u64,
    pub category_total: u64,
}

/// A failure's category and subtype.
type Kind = (Category, Subtype);

/// A label an LLM classifier changed: the rules' and the classifier's, with how often.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelChange {
    pub rules: Kind,
    pub classifier: Kind,
    pub count: u64,
}

/// What an LLM classifier (`--classify-llm`) did to the counted failures' labels.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Classified {
    /// The classifier models asked.
    pub models: Vec<String>,
    /// Failures asked about, and how many of them got each verdict.
    pub asked: u64,
    pub labelled: u64,
    pub unparsed: u64,
    pub failed: u64,
    /// Labelled failures whose category or subtype differs from the rules'.
    pub changed: u64,
    pub changes: Vec<LabelChange>,
}

/// How one expected category fared: labelled failing samples and how many got it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgreementRow {
    pub category: Category,
    pub category_title: String,
    pub labelled: u64,
    pub agreed: u64,
}

/// One cell of the confusion table: expected category, given category, count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfusionCell {
    pub expected: Category,
    pub given: Category,
    pub count: u64,
}

/// Taxonomy agreement over the failing samples whose answer carried an `expected_label`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Agreement {
    /// Failing samples with an expected label, and how many got its category.
    pub labelled: u64,
    pub agreed: u64,
    /// `agreed / labelled`.
    pub rate: f64,
    /// Those whose expected label names a subtype, and how many got category and subtype.
    pub subtype_labelled: u64,
    pub subtype_agreed: u64,
    /// Samples with an expected label that did not fail (passed, no code): not scored.
    pub not_failing: u64,
    pub per_label: Vec<AgreementRow>,
    pub confusion: Vec<ConfusionCell>,
}

/// Agreement of the samples' labels (the classifier's where it gave one) with the expected
/// labels; `None` when no sample carries one.
pub fn agreement(samples: &[&SampleResult]) -> Option<Agreement> {
    let mut a = Agreement::default();
    let mut per: BTreeMap<Category, (u64, u64)> = BTreeMap::new();
    let mut confusion: BTreeMap<(Category, Category), u64> = BTreeMap::new();
    let mut any = false;
    for s in samples {
        let Some(e) = &s.expected else { continue };
        any = true;
        let Some(l) = &s.taxonomy else {
            a.not_failing += 1;
            continue;
        };
        a.labelled += 1;
        let ok = e.category == l.category;
        let row = per.entry(e.category).or_default();
        row.0 += 1;
        if ok {
            a.agreed += 1;
            row.1 += 1;
        }
        if e.subtype.is_some() {
            a.subtype_labelled += 1;
            if e.agrees(l) {
                a.subtype_agreed += 1;
            }
        }
        *confusion.entry((e.category, l.category)).or_default() += 1;
    }
    if !any {
        return None;
    }
    a.rate = if a.labelled > 0 {
        a.agreed as f64 / a.labelled as f64
    } else {
        0.0
    };
    a.per_label = per
        .into_iter()
        .map(|(c, (labelled, agreed))| AgreementRow {
            category: c,
            category_title: c.title().into(),
            labelled,
            agreed,
        })
        .collect();
    a.confusion = confusion
        .into_iter()
        .map(|((expected, given), count)| ConfusionCell {
            expected,
            given,
            count,
        })
        .collect();
    Some(a)
}

/// A failure a behaviour rule labelled, with what it saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BehaviourRow {
    pub task_id: String,
    pub sample: u32,
    pub category: Category,
    pub subtype: Subtype,
    pub rule: String,
    pub evidence: String,
    /// The expected category, when the generations file gave one.
    pub expected: Option<Category>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Excluded {
    pub task_id: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Timing {
    /// Samples that were run in this invocation (not from the store, not no_code/patch_error).
    pub samples_run: usize,
    pub mean_wall_s: f64,
    pub mean_tests_s: f64,
    /// Harness overhead per sample: wall time minus the tests' own run time.
    pub mean_overhead_s: f64,
    pub median_overhead_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub tasks: usize,
    pub samples: usize,
    /// The ks reported: every counted task has at least k samples.
    pub ks: Vec<u64>,
    pub pass_at: Vec<PassAt>,
    pub partial: f64,
    /// Counts of every status over the counted tasks' samples.
    pub statuses: BTreeMap<Status, u64>,
    pub by_stage: Vec<GroupRow>,
    pub by_task: Vec<GroupRow>,
    pub by_data: Vec<GroupRow>,
    pub per_task: Vec<TaskRow>,
    pub taxonomy: Vec<TaxonomyRow>,
    /// How many failures each taxonomy rule labelled.
    pub rules: BTreeMap<String, u64>,
    pub failures: u64,
    /// `None` when no classifier was asked.
    pub classifier: Option<Classified>,
    /// Taxonomy agreement with the generations' expected labels; `None` when none has one.
    pub agreement: Option<Agreement>,
    /// The failures labelled by what the code did (`behaviour_*` rules), with the evidence.
    pub behaviour: Vec<BehaviourRow>,
    pub excluded: Vec<Excluded>,
    pub timing: Timing,
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// The classifier's verdicts over `samples`; `None` when it was asked about none.
fn classified(samples: &[&SampleResult]) -> Option<Classified> {
    let mut c = Classified::default();
    // (rules' label, classifier's label) -> count
    let mut changes: BTreeMap<(Kind, Kind), u64> = BTreeMap::new();
    for s in samples {
        let (Some(f), Some(label)) = (&s.refinement, &s.taxonomy) else {
            continue;
        };
        c.asked += 1;
        match f.verdict {
            Verdict::Labelled => c.labelled += 1,
            Verdict::Unparsed => c.unparsed += 1,
            Verdict::Failed => c.failed += 1,
        }
        if !c.models.contains(&f.model) {
            c.models.push(f.model.clone());
        }
        if s.relabelled() {
            c.changed += 1;
            let from = (f.rules.category, f.rules.subtype);
            *changes
                .entry((from, (label.category, label.subtype)))
                .or_default() += 1;
        }
    }
    c.changes = changes
        .into_iter()
        .map(|((rules, classifier), count)| LabelChange {
            rules,
            classifier,
            count,
        })
        .collect();
    c.changes.sort_by_key(|x| std::cmp::Reverse(x.count));
    (c.asked > 0).then_some(c)
}

/// The reason a task is left out, if it is.
fn exclusion(reference: Option<&SampleResult>) -> Option<String> {
    let r = reference?;
    if r.status == Status::Pass {
        return None;
    }
    let why = match &r.failure {
        Some(f) => format!("{}: {}", f.kind, f.message.lines().next().unwrap_or("")),
        None => String::new(),
    };
    Some(
        format!("reference solution: {} {why}", r.status.name())
            .trim()
            .to_string(),
    )
}

fn group<T: LabelValue>(rows: &[TaskRow], ks: &[u64], of: impl Fn(&Labels) -> T) -> Vec<GroupRow> {
    T::ALL
        .iter()
        .map(|&v| {
            let members: Vec<&TaskRow> = rows.iter().filter(|r| of(&r.labels) == v).collect();
            let pass_at = ks
                .iter()
                .map(|&k| GroupPassAt {
                    k,
                    value: mean(
                        members
                            .iter()
                            .filter_map(|r| r.pass_at.iter().find(|p| p.k == k).map(|p| p.value)),
                    ),
                })
                .collect();
            GroupRow {
                name: v.name().to_string(),
                title: v.title().to_string(),
                tasks: members.len(),
                samples: members.iter().map(|r| r.n).sum(),
                pass_at,
                partial: mean(members.iter().map(|r| r.partial)),
            }
        })
        .collect()
}

/// Summarise the samples of a run (`results`, role `sample`) given the references' results.
pub fn summarize(results: &[SampleResult], references: &[SampleResult]) -> Summary {
    let refs: HashMap<&str, &SampleResult> = references
        .iter()
        .filter(|r| r.role == Role::Reference)
        .map(|r| (r.task_id.as_str(), r))
        .collect();
    // Samples per task, in first-seen order.
    let mut order: Vec<&str> = Vec::new();
    let mut per: HashMap<&str, Vec<&SampleResult>> = HashMap::new();
    for r in results.iter().filter(|r| r.role == Role::Sample) {
        per.entry(r.task_id.as_str())
            .or_insert_with(|| {
                order.push(r.task_id.as_str());
                Vec::new()
            })
            .push(r);
    }
    let mut excluded = Vec::new();
    let mut rows = Vec::new();
    let mut statuses: BTreeMap<Status, u64> = Status::ALL.iter().map(|s| (*s, 0)).collect();
    let mut counted: Vec<&SampleResult> = Vec::new();
    for id in order {
        let samples = &per[id];
        if let Some(reason) = exclusion(refs.get(id).copied()) {
            excluded.push(Excluded {
                task_id: id.to_string(),
                reason,
            });
            continue;
        }
        let mut st: BTreeMap<Status, u64> = BTreeMap::new();
        for s in samples {
            *st.entry(s.status).or_default() += 1;
            *statuses.entry(s.status).or_default() += 1;
        }
        let judged: Vec<&&SampleResult> = samples
            .iter()
            .filter(|s| s.status != Status::Infra)
            .collect();
        if judged.is_empty() {
            excluded.push(Excluded {
                task_id: id.to_string(),
                reason: "no sample could be run (infrastructure errors)".into(),
            });
            continue;
        }
        counted.extend(samples.iter().copied());
        let n = judged.len() as u64;
        let c = judged.iter().filter(|s| s.status == Status::Pass).count() as u64;
        rows.push(TaskRow {
            task_id: id.to_string(),
            labels: samples[0].labels,
            n,
            c,
            pass_at: KS
                .iter()
                .filter_map(|&k| pass_at_k(n, c, k).map(|value| PassAt { k, value }))
                .collect(),
            partial: mean(judged.iter().map(|s| s.partial())).unwrap_or(0.0),
            statuses: st,
        });
    }
    let ks: Vec<u64> = KS
        .iter()
        .copied()
        .filter(|&k| !rows.is_empty() && rows.iter().all(|r| r.n >= k))
        .collect();
    let pass_at = ks
        .iter()
        .map(|&k| PassAt {
            k,
            value: mean(
                rows.iter()
                    .filter_map(|r| r.pass_at.iter().find(|p| p.k == k).map(|p| p.value)),
            )
            .unwrap_or(0.0),
        })
        .collect();

    let mut tax: BTreeMap<(Category, Subtype), u64> = BTreeMap::new();
    let mut rules: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = 0;
    for s in &counted {
        if let Some(l) = &s.taxonomy {
            *tax.entry((l.category, l.subtype)).or_default() += 1;
            *rules.entry(l.rule.clone()).or_default() += 1;
            failures += 1;
        }
    }
    let mut cat_total: BTreeMap<Category, u64> = BTreeMap::new();
    for ((c, _), n) in &tax {
        *cat_total.entry(*c).or_default() += n;
    }
    let taxonomy = tax
        .into_iter()
        .map(|((c, s), count)| TaxonomyRow {
            category: c,
            category_title: c.title().into(),
            subtype: s,
            subtype_title: s.title().into(),
            count,
            category_total: cat_total[&c],
        })
        .collect();

    let run: Vec<&SampleResult> = results
        .iter()
        .chain(references.iter())
        .filter(|r| !r.cached && r.wall_s > 0.0 && r.status != Status::Infra)
        .collect();
    let overheads: Vec<f64> = run
        .iter()
        .map(|r| (r.wall_s - r.tests_s).max(0.0))
        .collect();
    let timing = Timing {
        samples_run: run.len(),
        mean_wall_s: mean(run.iter().map(|r| r.wall_s)).unwrap_or(0.0),
        mean_tests_s: mean(run.iter().map(|r| r.tests_s)).unwrap_or(0.0),
        mean_overhead_s: mean(overheads.iter().copied()).unwrap_or(0.0),
        median_overhead_s: median(overheads),
    };

    Summary {
        tasks: rows.len(),
        samples: counted.len(),
        by_stage: group::<Stage>(&rows, &ks, |l| l.stage),
        by_task: group::<TaskType>(&rows, &ks, |l| l.task),
        by_data: group::<DataType>(&rows, &ks, |l| l.data),
        ks,
        pass_at,
        partial: mean(rows.iter().map(|r| r.partial)).unwrap_or(0.0),
        statuses,
        per_task: rows,
        taxonomy,
        rules,
        failures,
        classifier: classified(&counted),
        agreement: agreement(&counted),
        behaviour: counted
            .iter()
            .filter_map(|s| {
                let l = s.taxonomy.as_ref()?;
                let evidence = l
                    .evidence
                    .clone()
                    .or_else(|| s.refinement.as_ref().and_then(|f| f.rules.evidence.clone()))?;
                Some(BehaviourRow {
                    task_id: s.task_id.clone(),
                    sample: s.sample,
                    category: l.category,
                    subtype: l.subtype,
                    rule: l.rule.clone(),
                    evidence,
                    expected: s.expected.map(|e| e.category),
                })
            })
            .collect(),
        excluded,
        timing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Failure;
    use crate::taxonomy::{Label, LabelSource};

    fn labels(stage: Stage) -> Labels {
        Labels {
            stage,
            task: TaskType::General,
            data: DataType::Image,
        }
    }

    fn sample(task: &str, i: u32, status: Status, stage: Stage) -> SampleResult {
        SampleResult {
            task_id: task.into(),
            role: Role::Sample,
            sample: i,
            status,
            labels: labels(stage),
            extraction: None,
            code: None,
            tests: vec![],
            passed: if status == Status::Pass { 3 } else { 1 },
            total: 3,
            failure: None,
            taxonomy: (status == Status::Fail).then(|| Label {
                category: Category::WrongInputType,
                subtype: Subtype::TypeMismatch,
                rule: "type_mismatch".into(),
                source: LabelSource::Rules,
                evidence: None,
            }),
            refinement: None,
            expected: None,
            wall_s: 1.0,
            tests_s: 0.25,
            timeout_s: 5.0,
            peak_mb: 0,
            output_tail: String::new(),
            cached: false,
            key: format!("{task}{i}"),
        }
    }

    fn reference(task: &str, status: Status) -> SampleResult {
        let mut r = sample(task, 0, status, Stage::Training);
        r.role = Role::Reference;
        r.taxonomy = None;
        if status != Status::Pass {
            r.failure = Some(Failure {
                kind: "ImportError".into(),
                message: "no module x".into(),
                traceback: String::new(),
                nodeid: None,
            });
        }
        r
    }

    #[test]
    fn pass_at_k_partial_groups_and_exclusions() {
        let mut results = Vec::new();
        // task a (training): 10 samples, 3 pass; task b (inference): 10 samples, 0 pass + 1 infra
        for i in 0..10 {
            results.push(sample(
                "a",
                i,
                if i < 3 { Status::Pass } else { Status::Fail },
                Stage::Training,
            ));
            results.push(sample("b", i, Status::Fail, Stage::Inference));
        }
        results.push(sample("b", 10, Status::Infra, Stage::Inference));
        // task c: its reference fails, so it does not count
        for i in 0..10 {
            results.push(sample("c", i, Status::Pass, Stage::Training));
        }
        let refs = vec![
            reference("a", Status::Pass),
            reference("b", Status::Pass),
            reference("c", Status::Error),
        ];
        let s = summarize(&results, &refs);
        assert_eq!(s.tasks, 2);
        assert_eq!(s.ks, vec![1, 5, 10]);
        let p = |k: u64| s.pass_at.iter().find(|p| p.k == k).unwrap().value;
        // a: pass@1 0.3, pass@5 1 − C(7,5)/C(10,5) = 1 − 21/252; b: 0
        assert!((p(1) - 0.15).abs() < 1e-12);
        assert!((p(5) - (1.0 - 21.0 / 252.0) / 2.0).abs() < 1e-12);
        assert!((p(10) - 0.5).abs() < 1e-12);
        // partial: a = (3·1 + 7·1/3)/10, b = 1/3 (infra excluded)
        let a = (3.0 + 7.0 / 3.0) / 10.0;
        assert!((s.partial - (a + 1.0 / 3.0) / 2.0).abs() < 1e-12);
        assert_eq!(s.statuses[&Status::Infra], 1);
        assert_eq!(s.statuses[&Status::Pass], 3, "task c is not counted");
        assert_eq!(s.excluded.len(), 1);
        assert!(
            s.excluded[0]
                .reason
                .contains("reference solution: error ImportError"),
            "{:?}",
            s.excluded
        );
        let training = s.by_stage.iter().find(|g| g.name == "training").unwrap();
        assert_eq!(training.tasks, 1);
        assert!((training.pass_at[0].value.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(training.pass_at[0].k, 1);
        let eval = s.by_stage.iter().find(|g| g.name == "evaluation").unwrap();
        assert_eq!((eval.tasks, eval.pass_at[0].value), (0, None));
        assert_eq!(s.failures, 17);
        assert_eq!(s.taxonomy[0].count, 17);
        assert_eq!(s.rules["type_mismatch"], 17);
        assert!((s.timing.mean_overhead_s - 0.75).abs() < 1e-12);
    }

    #[test]
    fn agreement_counts_labelled_failures_per_label_with_a_confusion_table() {
        use crate::taxonomy::ExpectedLabel;
        let mut results: Vec<SampleResult> = (0..5)
            .map(|i| sample("a", i, Status::Fail, Stage::Training))
            .collect();
        results.push(sample("a", 5, Status::Pass, Stage::Training));
        results.push(sample("a", 6, Status::Fail, Stage::Training));
        let exp = |c: Category, s: Option<Subtype>| {
            Some(ExpectedLabel {
                category: c,
                subtype: s,
            })
        };
        // every failure is labelled wrong_input_type / type_mismatch by `sample`
        results[0].expected = exp(Category::WrongInputType, None);
        results[1].expected = exp(Category::WrongInputType, Some(Subtype::TypeMismatch));
        results[2].expected = exp(Category::WrongInputType, Some(Subtype::TensorShapeMismatch));
        results[3].expected = exp(Category::MissingCornerCase, None);
        results[4].expected = exp(Category::MissingCornerCase, None);
        results[5].expected = exp(Category::MissingCornerCase, None); // passed: not scored
        let s = summarize(&results, &[]);
        let a = s.agreement.unwrap();
        assert_eq!((a.labelled, a.agreed, a.not_failing), (5, 3, 1));
        assert!((a.rate - 0.6).abs() < 1e-12);
        assert_eq!((a.subtype_labelled, a.subtype_agreed), (2, 1));
        assert_eq!(
            a.per_label,
            vec![
                AgreementRow {
                    category: Category::MissingCornerCase,
                    category_title: "Missing Corner Case".into(),
                    labelled: 2,
                    agreed: 0
                },
                AgreementRow {
                    category: Category::WrongInputType,
                    category_title: "Wrong Input Type".into(),
                    labelled: 3,
                    agreed: 3
                },
            ]
        );
        assert!(a.confusion.contains(&ConfusionCell {
            expected: Category::MissingCornerCase,
            given: Category::WrongInputType,
            count: 2
        }));
        assert!(summarize(&results[6..], &[]).agreement.is_none());
    }

    #[test]
    fn the_distribution_uses_the_classifiers_labels_and_counts_the_changes() {
        use crate::refine::{Refinement, Verdict};
        let refined = |i: u32, verdict: Verdict, to: (Category, Subtype)| {
            let mut r = sample("a", i, Status::Fail, Stage::Training);
            let rules = r.taxonomy.clone().unwrap();
            let label = r.taxonomy.as_mut().unwrap();
            (label.category, label.subtype) = to;
            label.source = LabelSource::Llm;
            r.refinement = Some(Refinement {
                model: "m".into(),
                verdict,
                rules,
                detail: String::new(),
            });
            r
        };
        let same = (Category::WrongInputType, Subtype::TypeMismatch);
        let other = (Category::SillyMistake, Subtype::NotDlRelated);
        let results = vec![
            refined(0, Verdict::Labelled, other),
            refined(1, Verdict::Labelled, other),
            refined(2, Verdict::Labelled, same),
            refined(3, Verdict::Unparsed, same),
            refined(4, Verdict::Failed, same),
            sample("a", 5, Status::Fail, Stage::Training),
        ];
        let s = summarize(&results, &[]);
        let c = s.classifier.unwrap();
        assert_eq!(
            (c.asked, c.labelled, c.unparsed, c.failed, c.changed),
            (5, 3, 1, 1, 2)
        );
        assert_eq!(c.models, ["m"]);
        assert_eq!(
            c.changes,
            [LabelChange {
                rules: same,
                classifier: other,
                count: 2
            }]
        );
        let count = |cat: Category| {
            s.taxonomy
                .iter()
                .filter(|t| t.category == cat)
                .map(|t| t.count)
                .sum::<u64>()
        };
        assert_eq!(
            (
                count(Category::SillyMistake),
                count(Category::WrongInputType)
            ),
            (2, 4)
        );
        assert!(summarize(&results[5..], &[]).classifier.is_none());
    }

    #[test]
    fn k_is_reported_only_when_every_task_has_enough_samples() {
        let mut results = vec![];
        for i in 0..5 {
            results.push(sample("a", i, Status::Pass, Stage::Training));
        }
        results.push(sample("b", 0, Status::Fail, Stage::Training));
        let s = summarize(&results, &[]);
        assert_eq!(s.ks, vec![1]);
        assert_eq!(s.pass_at, vec![PassAt { k: 1, value: 0.5 }]);
    }
}
