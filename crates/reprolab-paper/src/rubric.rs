//! PaperBench's rubric: a tree of task nodes `{id, requirements, weight, sub_tasks,
//! task_category, finegrained_task_category}`. Leaves are judged 0 or 1; an inner node's score
//! is the weighted mean of its children's (weights are relative among siblings; a node whose
//! children weigh 0 in all scores 0.0, as PaperBench's `score_from_children`). A leaf that could
//! not be judged is *invalid*: PaperBench scores it 0 and marks the tree invalid; the grade here
//! gives that score and, beside it, the score over the judged leaves only and the count of
//! invalid ones, so that a failed judge never hides as a 0.
//!
//! The Code-Dev variant grades only Code Development leaves: the others are removed, and so is
//! every inner node left without leaves (PaperBench's `reduce_to_category`). Where no Code
//! Development leaf is left, the whole root becomes one Code Development leaf, judged as a whole
//! (PaperBench's `run_judge`).
//!
//! Leaf scores are 0 or 1, as PaperBench's judge gives them (its continuous scores are only for
//! its depth-capped "Subtree" shims); a scores file with another value is an input error.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checks::Outcome;
use crate::fingerprint::Criterion;
use crate::verify::{Verdict, Verification};

/// A leaf's category.
pub const CODE_DEVELOPMENT: &str = "Code Development";
pub const CODE_EXECUTION: &str = "Code Execution";
pub const RESULT_ANALYSIS: &str = "Result Analysis";
const CATEGORIES: &[&str] = &[CODE_DEVELOPMENT, CODE_EXECUTION, RESULT_ANALYSIS];

/// One node of a rubric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rubric {
    pub id: String,
    pub requirements: String,
    pub weight: f64,
    #[serde(default)]
    pub sub_tasks: Vec<Rubric>,
    /// Set on leaves.
    #[serde(default)]
    pub task_category: Option<String>,
    #[serde(default)]
    pub finegrained_task_category: Option<String>,
    /// reprolab's extension: the fingerprint criteria a leaf grades, so that a verification
    /// scores it without a judge ([`scores_from_verification`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RubricError {
    #[error("{}: cannot read the rubric", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a PaperBench rubric ({detail}); expected a JSON task node {{id, requirements, weight, sub_tasks, task_category}}", path.display())]
    Json { path: PathBuf, detail: String },
    #[error("{}: node {id}: {problem}", path.display())]
    Invalid {
        path: PathBuf,
        id: String,
        problem: String,
    },
    #[error("{}: scores for leaves the rubric does not have: {}", path.display(), ids.join(", "))]
    UnknownLeaves { path: PathBuf, ids: Vec<String> },
    #[error("{}: cannot read the verification", path.display())]
    ReadVerification {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not JSON", path.display())]
    VerificationJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: not a verification (expected the verification.json of `reprolab paper verify --out`)", path.display())]
    NotAVerification {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// A judged leaf: 0 or 1, or `None` when the judge failed (an invalid leaf).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeafScore {
    pub score: Option<f64>,
    #[serde(default)]
    pub explanation: String,
}

/// A graded node (PaperBench's `GradedTaskNode`, with the score over valid leaves added).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    pub id: String,
    pub weight: f64,
    /// PaperBench's score: invalid leaves count 0.
    pub score: f64,
    /// False when a leaf below could not be judged.
    pub valid_score: bool,
    /// The weighted score over the judged leaves only (`None` when none was judged).
    pub score_over_valid: Option<f64>,
    pub invalid_leaves: usize,
    pub leaves: usize,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub explanation: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sub_tasks: Vec<Grade>,
}

impl Rubric {
    /// Read and check a rubric file: unique ids, finite non-negative weights, a known category
    /// on every leaf.
    pub fn load(path: &Path) -> Result<Rubric, RubricError> {
        let text = std::fs::read_to_string(path).map_err(|source| RubricError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let rubric: Rubric = serde_json::from_str(&text).map_err(|e| RubricError::Json {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        rubric.check(path)?;
        Ok(rubric)
    }

    fn check(&self, path: &Path) -> Result<(), RubricError> {
        let mut seen = HashSet::new();
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            let bad = |problem: String| RubricError::Invalid {
                path: path.to_path_buf(),
                id: node.id.clone(),
                problem,
            };
            if !seen.insert(node.id.as_str()) {
                return Err(bad("the id appears twice; ids must be unique".into()));
            }
            if !(node.weight.is_finite() && node.weight >= 0.0) {
                return Err(bad(format!(
                    "weight is {}; expected a number >= 0",
                    node.weight
                )));
            }
            if node.is_leaf() {
                match node.task_category.as_deref() {
                    Some(c) if CATEGORIES.contains(&c) => {}
                    other => {
                        return Err(bad(format!(
                            "a leaf's task_category is {other:?}; expected one of {}",
                            CATEGORIES.join(", ")
                        )));
                    }
                }
            }
            stack.extend(node.sub_tasks.iter());
        }
        Ok(())
    }

    pub fn is_leaf(&self) -> bool {
        self.sub_tasks.is_empty()
    }

    /// Every leaf, depth first.
    pub fn leaves(&self) -> Vec<&Rubric> {
        if self.is_leaf() {
            return vec![self];
        }
        self.sub_tasks.iter().flat_map(Rubric::leaves).collect()
    }

    /// The Code-Dev rubric: only Code Development leaves, inner nodes without leaves removed;
    /// without any Code Development leaf, the root as one Code Development leaf (PaperBench).
    pub fn code_dev(&self) -> Rubric {
        self.code_dev_leaves().unwrap_or_else(|| Rubric {
            sub_tasks: Vec::new(),
            task_category: Some(CODE_DEVELOPMENT.into()),
            finegrained_task_category: None,
            ..self.clone()
        })
    }

    /// The tree reduced to its Code Development leaves; `None` when it has none.
    fn code_dev_leaves(&self) -> Option<Rubric> {
        if self.is_leaf() {
            return (self.task_category.as_deref() == Some(CODE_DEVELOPMENT)).then(|| self.clone());
        }
        let kept: Vec<Rubric> = self
            .sub_tasks
            .iter()
            .filter_map(Rubric::code_dev_leaves)
            .collect();
        (!kept.is_empty()).then(|| Rubric {
            sub_tasks: kept,
            ..self.clone()
        })
    }

    /// Grade the tree from its leaves' scores; a leaf absent from `scores` is invalid.
    pub fn grade(&self, scores: &BTreeMap<String, LeafScore>) -> Grade {
        if self.is_leaf() {
            let leaf = scores.get(&self.id);
            let score = leaf.and_then(|l| l.score);
            return Grade {
                id: self.id.clone(),
                weight: self.weight,
                score: score.unwrap_or(0.0),
                valid_score: score.is_some(),
                score_over_valid: score,
                invalid_leaves: usize::from(score.is_none()),
                leaves: 1,
                explanation: leaf
                    .map(|l| l.explanation.clone())
                    .unwrap_or_else(|| "not judged".into()),
                sub_tasks: Vec::new(),
            };
        }
        let children: Vec<Grade> = self.sub_tasks.iter().map(|c| c.grade(scores)).collect();
        let weighted = |pairs: Vec<(f64, f64)>| -> f64 {
            let total: f64 = pairs.iter().map(|(w, _)| w).sum();
            if total == 0.0 {
                0.0
            } else {
                pairs.iter().map(|(w, s)| w * s).sum::<f64>() / total
            }
        };
        let score = weighted(children.iter().map(|c| (c.weight, c.score)).collect());
        let judged: Vec<(f64, f64)> = children
            .iter()
            .filter_map(|c| c.score_over_valid.map(|s| (c.weight, s)))
            .collect();
        Grade {
            id: self.id.clone(),
            weight: self.weight,
            score,
            valid_score: children.iter().all(|c| c.valid_score),
            score_over_valid: (!judged.is_empty()).then(|| weighted(judged)),
            invalid_leaves: children.iter().map(|c| c.invalid_leaves).sum(),
            leaves: children.iter().map(|c| c.leaves).sum(),
            explanation: String::new(),
            sub_tasks: children,
        }
    }
}

impl Rubric {
    /// Scores for leaves the rubric lacks are a mistake in the scores file `path`: an error that
    /// lists them.
    pub fn check_score_ids(
        &self,
        scores: &BTreeMap<String, LeafScore>,
        path: &Path,
    ) -> Result<(), RubricError> {
        let known: HashSet<&str> = self.leaves().iter().map(|l| l.id.as_str()).collect();
        let ids: Vec<String> = scores
            .keys()
            .filter(|k| !known.contains(k.as_str()))
            .cloned()
            .collect();
        if ids.is_empty() {
            Ok(())
        } else {
            Err(RubricError::UnknownLeaves {
                path: path.to_path_buf(),
                ids,
            })
        }
    }

    /// A leaf put to a judge as a criterion: its requirement is the fact (and the source).
    pub fn as_criterion(&self) -> Criterion {
        Criterion {
            id: self.id.clone(),
            fact: self.requirements.clone(),
            scope: self.task_category.clone().unwrap_or_default(),
            category: "algorithm".into(),
            source: self.requirements.clone(),
            checks: Vec::new(),
        }
    }
}

/// The verification in `path`: the verification.json of `reprolab paper verify --out` (the
/// verification under its `verification` key), or a bare verification.
pub fn read_verification(path: &Path) -> Result<Verification, RubricError> {
    let text = std::fs::read_to_string(path).map_err(|source| RubricError::ReadVerification {
        path: path.to_path_buf(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| RubricError::VerificationJson {
            path: path.to_path_buf(),
            source,
        })?;
    let inner = value.get("verification").cloned().unwrap_or(value);
    serde_json::from_value(inner).map_err(|source| RubricError::NotAVerification {
        path: path.to_path_buf(),
        source,
    })
}

/// Leaf scores from a JSON object `{leaf_id: 0 | 1 | null | {"score": ..., "explanation": ...}}`.
pub fn parse_scores(path: &Path) -> Result<BTreeMap<String, LeafScore>, RubricError> {
    let bad = |detail: String| RubricError::Json {
        path: path.to_path_buf(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|source| RubricError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let obj = value.as_object().ok_or_else(|| {
        bad(
            "leaf scores must be a JSON object {leaf_id: 0, 1, null or {score, explanation}}"
                .into(),
        )
    })?;
    let mut out = BTreeMap::new();
    for (id, v) in obj {
        let leaf = match v {
            serde_json::Value::Null => LeafScore {
                score: None,
                explanation: "the judge failed".into(),
            },
            serde_json::Value::Number(n) => LeafScore {
                score: n.as_f64(),
                explanation: String::new(),
            },
            serde_json::Value::Object(_) => {
                serde_json::from_value(v.clone()).map_err(|e| bad(format!("leaf {id}: {e}")))?
            }
            other => {
                return Err(bad(format!(
                    "leaf {id}: expected 0, 1, null or an object, found {other}"
                )));
            }
        };
        if let Some(s) = leaf.score
            && s != 0.0
            && s != 1.0
        {
            return Err(bad(format!(
                "leaf {id}: score {s}: a leaf scores 0 (requirement not met) or 1 (met), as \
                 PaperBench's judge scores it; null when it could not be judged"
            )));
        }
        out.insert(id.clone(), leaf);
    }
    Ok(out)
}

/// The scores of the leaves that name criteria: 1 when all of them pass, 0 when one fails;
/// a leaf with an undecided criterion (and none failed) or one the verification lacks is left
/// out, to be judged or counted invalid.
pub fn scores_from_verification(
    rubric: &Rubric,
    verification: &Verification,
) -> BTreeMap<String, LeafScore> {
    let mut out = BTreeMap::new();
    for leaf in rubric
        .leaves()
        .into_iter()
        .filter(|l| !l.criteria.is_empty())
    {
        let verdicts: Vec<Option<&Verdict>> = leaf
            .criteria
            .iter()
            .map(|id| verification.get(id))
            .collect();
        let failed: Vec<&str> = verdicts
            .iter()
            .flatten()
            .filter(|v| v.outcome == Outcome::Fail)
            .map(|v| v.id.as_str())
            .collect();
        let all_pass = verdicts
            .iter()
            .all(|v| v.is_some_and(|v| v.outcome == Outcome::Pass));
        let score = if !failed.is_empty() {
            Some((0.0, format!("criteria failed: {}", failed.join(", "))))
        } else if all_pass {
            Some((1.0, format!("criteria pass: {}", leaf.criteria.join(", "))))
        } else {
            None
        };
        if let Some((score, explanation)) = score {
            out.insert(
                leaf.id.clone(),
                LeafScore {
                    score: Some(score),
                    explanation,
                },
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(id: &str, weight: f64, category: &str) -> Rubric {
        Rubric {
            id: id.into(),
            requirements: format!("requirement {id}"),
            weight,
            sub_tasks: vec![],
            task_category: Some(category.into()),
            finegrained_task_category: None,
            criteria: vec![],
        }
    }

    fn node(id: &str, weight: f64, sub_tasks: Vec<Rubric>) -> Rubric {
        Rubric {
            id: id.into(),
            requirements: String::new(),
            weight,
            sub_tasks,
            task_category: None,
            finegrained_task_category: None,
            criteria: vec![],
        }
    }

    fn scores(pairs: &[(&str, Option<f64>)]) -> BTreeMap<String, LeafScore> {
        pairs
            .iter()
            .map(|(id, s)| {
                (
                    id.to_string(),
                    LeafScore {
                        score: *s,
                        explanation: String::new(),
                    },
                )
            })
            .collect()
    }

    /// root(1): a(3): [a1(1) CD = 1, a2(1) CE = 0], b(1): [b1(2) CD = 1, b2(1) RA = 0]
    fn tree() -> Rubric {
        node(
            "root",
            1.0,
            vec![
                node(
                    "a",
                    3.0,
                    vec![
                        leaf("a1", 1.0, CODE_DEVELOPMENT),
                        leaf("a2", 1.0, CODE_EXECUTION),
                    ],
                ),
                node(
                    "b",
                    1.0,
                    vec![
                        leaf("b1", 2.0, CODE_DEVELOPMENT),
                        leaf("b2", 1.0, RESULT_ANALYSIS),
                    ],
                ),
            ],
        )
    }

    #[test]
    fn weighted_means_by_hand() {
        let g = tree().grade(&scores(&[
            ("a1", Some(1.0)),
            ("a2", Some(0.0)),
            ("b1", Some(1.0)),
            ("b2", Some(0.0)),
        ]));
        // a = 0.5, b = 2/3, root = (3 * 0.5 + 1 * 2/3) / 4 = 0.541666...
        assert!((g.sub_tasks[0].score - 0.5).abs() < 1e-12);
        assert!((g.sub_tasks[1].score - 2.0 / 3.0).abs() < 1e-12);
        assert!((g.score - (1.5 + 2.0 / 3.0) / 4.0).abs() < 1e-12);
        assert!(g.valid_score && g.invalid_leaves == 0 && g.leaves == 4);
    }

    #[test]
    fn code_dev_keeps_only_code_development_leaves() {
        let cd = tree().code_dev();
        let ids: Vec<&str> = cd.leaves().iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids, vec!["a1", "b1"]);
        let g = cd.grade(&scores(&[("a1", Some(1.0)), ("b1", Some(0.0))]));
        assert!((g.score - 0.75).abs() < 1e-12); // (3 * 1 + 1 * 0) / 4
        // Without a Code Development leaf, PaperBench judges the root as one such leaf.
        let no_cd = node("r", 1.0, vec![leaf("x", 1.0, RESULT_ANALYSIS)]).code_dev();
        assert!(no_cd.is_leaf());
        assert_eq!(no_cd.task_category.as_deref(), Some(CODE_DEVELOPMENT));
        assert_eq!(no_cd.grade(&scores(&[("r", Some(1.0))])).score, 1.0);
    }

    #[test]
    fn zero_weights_score_zero_as_paperbench() {
        let t = node(
            "r",
            1.0,
            vec![
                leaf("x", 0.0, CODE_DEVELOPMENT),
                leaf("y", 0.0, CODE_DEVELOPMENT),
            ],
        );
        let g = t.grade(&scores(&[("x", Some(1.0)), ("y", Some(1.0))]));
        assert_eq!(g.score, 0.0);
        let mixed = node(
            "r",
            1.0,
            vec![
                leaf("x", 0.0, CODE_DEVELOPMENT),
                leaf("y", 2.0, CODE_DEVELOPMENT),
            ],
        );
        assert_eq!(
            mixed
                .grade(&scores(&[("x", Some(0.0)), ("y", Some(1.0))]))
                .score,
            1.0
        );
    }

    #[test]
    fn invalid_leaves_count_zero_but_stay_visible() {
        let g = tree().grade(&scores(&[
            ("a1", Some(1.0)),
            ("a2", None),
            ("b1", Some(1.0)),
        ]));
        // PaperBench: a2 and the missing b2 count 0: the same 0.5416...
        assert!((g.score - (1.5 + 2.0 / 3.0) / 4.0).abs() < 1e-12);
        assert!(!g.valid_score);
        assert_eq!(g.invalid_leaves, 2);
        // Over the judged leaves only: a = 1, b = 1, root = 1.
        assert_eq!(g.score_over_valid, Some(1.0));
    }

    #[test]
    fn bad_rubrics_say_which_node_and_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("rubric-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        let write = |r: &Rubric| std::fs::write(&path, serde_json::to_string(r).unwrap()).unwrap();
        write(&node("r", 1.0, vec![leaf("x", -1.0, CODE_DEVELOPMENT)]));
        assert!(
            Rubric::load(&path)
                .unwrap_err()
                .to_string()
                .contains("node x: weight is -1")
        );
        write(&node("r", 1.0, vec![leaf("x", 1.0, "Coding")]));
        assert!(
            Rubric::load(&path)
                .unwrap_err()
                .to_string()
                .contains("task_category is Some(\"Coding\")")
        );
        write(&node(
            "r",
            1.0,
            vec![
                leaf("x", 1.0, CODE_DEVELOPMENT),
                leaf("x", 1.0, CODE_DEVELOPMENT),
            ],
        ));
        assert!(
            Rubric::load(&path)
                .unwrap_err()
                .to_string()
                .contains("appears twice")
        );
        std::fs::write(&path, "{\"id\": 3}").unwrap();
        assert!(
            Rubric::load(&path)
                .unwrap_err()
                .to_string()
                .contains("not a PaperBench rubric")
        );
        std::fs::write(
            &path,
            "{\"x\": 1, \"y\": null, \"z\": {\"score\": 0, \"explanation\": \"no\"}}",
        )
        .unwrap();
        let s = parse_scores(&path).unwrap();
        assert_eq!(
            (s["x"].score, s["y"].score, s["z"].explanation.as_str()),
            (Some(1.0), None, "no")
        );
        // PaperBench's leaves are pass/fail: neither 2 nor a partial 0.5 is a leaf score.
        for bad in ["2", "0.5"] {
            std::fs::write(&path, format!("{{\"x\": {bad}}}")).unwrap();
            let err = parse_scores(&path).unwrap_err().to_string();
            assert!(
                err.contains(&format!("leaf x: score {bad}: a leaf scores 0")),
                "{err}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn leaves_naming_criteria_are_scored_from_a_verification() {
        let verdict = |id: &str, outcome| Verdict {
            id: id.into(),
            fact: String::new(),
            category: "algorithm".into(),
            outcome,
            decided_by: None,
            evidence: vec![],
            checks: vec![],
        };
        let v = Verification {
            verdicts: vec![
                verdict("C1", Outcome::Pass),
                verdict("C2", Outcome::Fail),
                verdict("C3", Outcome::Undecided),
            ],
            syntax_errors: vec![],
        };
        let mut t = tree();
        let with =
            |l: &mut Rubric, ids: &[&str]| l.criteria = ids.iter().map(|s| s.to_string()).collect();
        with(&mut t.sub_tasks[0].sub_tasks[0], &["C1"]);
        with(&mut t.sub_tasks[0].sub_tasks[1], &["C1", "C2"]);
        with(&mut t.sub_tasks[1].sub_tasks[0], &["C1", "C3"]);
        with(&mut t.sub_tasks[1].sub_tasks[1], &["C9"]);
        let s = scores_from_verification(&t, &v);
        assert_eq!(s["a1"].score, Some(1.0));
        assert_eq!(s["a2"].score, Some(0.0));
        assert!(s["a2"].explanation.contains("C2"));
        assert!(
            !s.contains_key("b1"),
            "an undecided criterion leaves the leaf to a judge"
        );
        assert!(
            !s.contains_key("b2"),
            "a criterion the verification lacks too"
        );
    }

    #[test]
    fn scores_for_leaves_the_rubric_lacks_are_named() {
        let t = node("r", 1.0, vec![leaf("x", 1.0, CODE_EXECUTION)]);
        let path = Path::new("s.json");
        assert!(
            t.check_score_ids(&scores(&[("x", Some(1.0))]), path)
                .is_ok()
        );
        let e = t
            .check_score_ids(&scores(&[("zz", None), ("x", None), ("a", None)]), path)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.json: scores for leaves the rubric does not have: a, zz"
        );
    }

    #[test]
    fn a_leaf_is_judged_as_a_criterion_of_its_requirement() {
        let c = leaf("x", 1.0, CODE_DEVELOPMENT).as_criterion();
        assert_eq!((c.id.as_str(), c.category.as_str()), ("x", "algorithm"));
        assert_eq!(c.fact, "requirement x");
        assert_eq!(c.source, c.fact);
        assert_eq!(c.scope, CODE_DEVELOPMENT);
        assert!(c.checks.is_empty());
    }

    #[test]
    fn a_verification_is_read_bare_or_from_verify_out_and_errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let v = Verification {
            verdicts: Vec::new(),
            syntax_errors: vec!["bad.py".into()],
        };
        let bare = d.path().join("bare.json");
        std::fs::write(&bare, serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(read_verification(&bare).unwrap(), v);
        let out = d.path().join("verification.json");
        let wrapped = serde_json::json!({"paper": "p", "verification": v});
        std::fs::write(&out, wrapped.to_string()).unwrap();
        assert_eq!(read_verification(&out).unwrap(), v);
        let chain = |p: &Path| {
            let e = read_verification(p).unwrap_err();
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        };
        let missing = d.path().join("none.json");
        assert!(chain(&missing).starts_with(&format!(
            "{}: cannot read the verification: ",
            missing.display()
        )));
        std::fs::write(&out, "{").unwrap();
        assert!(chain(&out).starts_with(&format!("{}: not JSON: ", out.display())));
        std::fs::write(&out, "[1]").unwrap();
        assert!(chain(&out).starts_with(&format!(
            "{}: not a verification (expected the verification.json of `reprolab paper verify --out`): ",
            out.display()
        )));
    }
}
