//! A fingerprint extracted by an LLM (RePro's scan): each section of the paper is read on its
//! own (a small model sees one section at a time; a large one loses fewer details that way), the
//! model lists the implementation details it states, each with the sentence it came from, and
//! then the rules decide what stays: results and claims are dropped, a criterion whose sentence is
//! not in the paper is dropped as ungrounded, the same fact twice is merged. A criterion that
//! states one constant carries a static value check built from the names the model says code
//! would use, so the verifier can decide it without a judge.

use reprolab_llm::parse::extract_json;
use reprolab_llm::{ChatModel, ChatRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::collections::BTreeSet;

use crate::document::{Paper, is_reference_heading};
use crate::fingerprint::{
    CATEGORIES, Check, Criterion, Dropped, Fingerprint, StaticCheck, ValueCheck, normalize,
};
use crate::lineage::jaccard;

/// One part of the paper read in one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub heading: String,
    pub text: String,
}

/// The sections of a paper, each read in one call, without its references. A long section is
/// read whole: a criterion's sentence must not be cut in two.
pub fn chunks(paper: &Paper) -> Vec<Chunk> {
    paper
        .sections
        .iter()
        .filter(|s| !s.body.trim().is_empty() && !is_reference_heading(&s.heading))
        .map(|s| Chunk {
            heading: if s.heading.is_empty() {
                "(start)".into()
            } else {
                s.heading.clone()
            },
            text: s.body.clone(),
        })
        .collect()
}

/// What the extraction kept, what it dropped and why, and the calls it made.
#[derive(Debug, Clone, Serialize)]
pub struct Extraction {
    pub fingerprint: Fingerprint,
    pub dropped: Vec<Dropped>,
    /// Sections whose answer held no readable criteria list.
    pub unreadable: Vec<String>,
    pub calls: usize,
}

const SYSTEM: &str = "You extract a reproduction fingerprint from a machine-learning paper: the \
atomic, verifiable details an implementation must follow. You answer with JSON only.";

fn prompt(title: &str, chunk: &Chunk) -> String {
    format!(
        "Paper: {title}\nSection: {}\n\n{}\n\n---\nList every implementation detail this section \
states: data, preprocessing, hyperparameters, architecture, algorithm steps and formulas (keep an \
equation or an algorithm whole), evaluation protocol, packages. One fact per criterion. Leave out \
results, claims, comparisons and motivation.\nAnswer with JSON: {{\"criteria\": [{{\"fact\": \
\"...\", \"scope\": \"where it applies\", \"category\": one of {}, \"source\": \"the sentence of \
the section it comes from, copied exactly\", \"value\": {{\"names\": [\"identifiers code would \
use\"], \"equals\": the number or string}} (only when the fact is one constant)}}]}}. If the \
section states no such detail, answer {{\"criteria\": []}}.",
        chunk.heading,
        chunk.text,
        CATEGORIES.join(", ")
    )
}

/// A criterion as the model wrote it.
#[derive(Debug, Deserialize)]
struct Candidate {
    #[serde(default)]
    fact: String,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    value: Option<Value>,
}

/// Extract the fingerprint of `paper` section by section.
pub async fn extract(
    model: &dyn ChatModel,
    paper: &Paper,
    max_tokens: u32,
    mut on_chunk: impl FnMut(&Chunk),
) -> Extraction {
    let chunks = chunks(paper);
    let title = paper.title.as_str();
    let mut candidates = Vec::new();
    let mut unreadable = Vec::new();
    for chunk in &chunks {
        on_chunk(chunk);
        let mut req = ChatRequest::with_system(SYSTEM, prompt(title, chunk));
        req.max_tokens = max_tokens;
        req.json_mode = true;
        let parsed = match model.chat(&req).await {
            Ok(resp) => read_candidates(resp.text()),
            Err(e) => Err(format!("the call failed: {e}")),
        };
        match parsed {
            Ok(c) => candidates.extend(c),
            Err(why) => unreadable.push(format!("{}: {why}", chunk.heading)),
        }
    }
    let (mut fingerprint, dropped) = settle(candidates, &paper.text);
    fingerprint.paper = paper.title.clone();
    Extraction {
        fingerprint,
        dropped,
        unreadable,
        calls: chunks.len(),
    }
}

fn read_candidates(answer: &str) -> Result<Vec<Candidate>, String> {
    let json = extract_json(answer).map_err(|e| format!("no JSON in the answer ({e})"))?;
    let list = json
        .get("criteria")
        .cloned()
        .or_else(|| json.is_array().then_some(json))
        .ok_or("the JSON has no \"criteria\" list")?;
    let items = list.as_array().ok_or("\"criteria\" is not a list")?;
    // One malformed item should not cost the section's others.
    Ok(items
        .iter()
        .filter_map(|i| serde_json::from_value(i.clone()).ok())
        .collect())
}

/// The rules after the model: results and claims out, ungrounded out, duplicates merged, ids
/// given in order, a value check for a stated constant.
fn settle(candidates: Vec<Candidate>, paper_text: &str) -> (Fingerprint, Vec<Dropped>) {
    let mut dropped = Vec::new();
    let mut criteria = Vec::new();
    for (n, c) in candidates.into_iter().enumerate() {
        let id = format!("C{}", n + 1);
        let category = c.category.trim().to_lowercase();
        if c.fact.trim().is_empty() || c.source.trim().is_empty() {
            dropped.push(Dropped {
                id,
                fact: c.fact,
                reason: "no fact or no source sentence".into(),
            });
            continue;
        }
        if !CATEGORIES.contains(&category.as_str()) {
            dropped.push(Dropped {
                id,
                fact: c.fact,
                reason: format!("category {category:?}: a result or claim, not how to implement"),
            });
            continue;
        }
        let checks = c.value.and_then(value_check).into_iter().collect();
        criteria.push(Criterion {
            id,
            fact: c.fact.trim().to_string(),
            scope: c.scope.trim().to_string(),
            category,
            source: c.source.trim().to_string(),
            checks,
        });
    }
    let mut fp = Fingerprint {
        paper: String::new(),
        criteria,
    };
    dropped.extend(fp.ground(paper_text));
    dropped.extend(fp.dedupe());
    for (n, c) in fp.criteria.iter_mut().enumerate() {
        c.id = format!("C{}", n + 1);
    }
    (fp, dropped)
}

/// `{"names": [...], "equals": scalar}` as a static check; anything else is no check.
fn value_check(v: Value) -> Option<Check> {
    let names: Vec<String> = v
        .get("names")?
        .as_array()?
        .iter()
        .filter_map(|n| n.as_str())
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect();
    let equals = v.get("equals")?.clone();
    let scalar = equals.is_number() || equals.is_string() || equals.is_boolean();
    (!names.is_empty() && scalar).then(|| {
        Check::Static(StaticCheck::Value(ValueCheck {
            names,
            equals,
            within: Vec::new(),
        }))
    })
}

/// Which gold criteria an extracted fingerprint recalls: one whose source sentence overlaps the
/// gold's (one contains the other, or most of their words agree) and whose fact states the gold
/// fact's numbers.
pub fn recalled<'a>(gold: &'a Fingerprint, found: &Fingerprint) -> Vec<&'a str> {
    gold.criteria
        .iter()
        .filter(|g| found.criteria.iter().any(|f| same_criterion(g, f)))
        .map(|g| g.id.as_str())
        .collect()
}

fn same_criterion(gold: &Criterion, found: &Criterion) -> bool {
    let (a, b) = (normalize(&gold.source), normalize(&found.source));
    let overlap = a.contains(&b) || b.contains(&a) || jaccard(&word_set(&a), &word_set(&b)) >= 0.6;
    let numbers = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
            .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
            .map(|t| t.trim_matches(|c| c == '.' || c == '-').to_string())
            .collect()
    };
    let found_numbers = numbers(&found.fact);
    overlap
        && numbers(&gold.fact)
            .iter()
            .all(|n| found_numbers.contains(n))
}

/// The words of a text, for [`jaccard`].
fn word_set(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAPER: &str = "# Soft\n\n## Method\nWe set the smoothing factor to 0.1. Training uses SGD.\n\n## Results\nOur method wins by 2 points.";

    fn candidate(fact: &str, category: &str, source: &str, value: Option<Value>) -> Candidate {
        Candidate {
            fact: fact.into(),
            scope: "training".into(),
            category: category.into(),
            source: source.into(),
            value,
        }
    }

    #[test]
    fn results_ungrounded_and_repeated_criteria_are_dropped_with_reasons() {
        let (fp, dropped) = settle(
            vec![
                candidate(
                    "The smoothing factor is 0.1.",
                    "Hyperparameter",
                    "We set the smoothing factor to 0.1.",
                    Some(serde_json::json!({"names": ["epsilon", "smoothing"], "equals": 0.1})),
                ),
                candidate(
                    "Wins by 2 points.",
                    "result",
                    "Our method wins by 2 points.",
                    None,
                ),
                candidate("Uses Adam.", "algorithm", "Training uses Adam.", None),
                candidate(
                    "the smoothing factor is 0.1.",
                    "hyperparameter",
                    "We set the smoothing factor to 0.1.",
                    None,
                ),
                candidate(
                    "Training uses SGD.",
                    "algorithm",
                    "Training uses SGD.",
                    None,
                ),
            ],
            PAPER,
        );
        assert_eq!(
            fp.criteria
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>(),
            ["C1", "C2"]
        );
        assert_eq!(fp.criteria[0].category, "hyperparameter");
        assert!(
            matches!(&fp.criteria[0].checks[0], Check::Static(StaticCheck::Value(v)) if v.names == ["epsilon", "smoothing"])
        );
        let reasons: Vec<&str> = dropped.iter().map(|d| d.reason.as_str()).collect();
        assert_eq!(dropped.len(), 3, "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("result or claim")));
        assert!(reasons.iter().any(|r| r.contains("not in the paper")));
        assert!(reasons.iter().any(|r| r.contains("the same fact")));
    }

    #[test]
    fn a_paper_is_read_section_by_section_without_its_references() {
        let paper = Paper::from_markdown(
            std::path::Path::new("p.md"),
            "# Soft\n*A. B*\n\n## Method\nWe set 0.1.\n### Details\nMore.\n## References\n1. X.\n"
                .into(),
        );
        let c = chunks(&paper);
        let headings: Vec<&str> = c.iter().map(|c| c.heading.as_str()).collect();
        assert_eq!(headings, ["Soft", "Method", "Details"]);
        assert!(c[1].text.contains("We set 0.1."));
    }

    #[test]
    fn answers_are_read_tolerantly_and_bad_items_skipped() {
        let ok = read_candidates("Sure!\n```json\n{\"criteria\": [{\"fact\": \"a\", \"source\": \"b\", \"category\": \"data\"}, 7]}\n```").unwrap();
        assert_eq!(ok.len(), 1);
        assert!(read_candidates("no json here").is_err());
        assert!(read_candidates("{\"facts\": []}").is_err());
    }

    #[test]
    fn recall_needs_the_same_sentence_and_the_gold_numbers() {
        let crit = |id: &str, fact: &str, source: &str| Criterion {
            id: id.into(),
            fact: fact.into(),
            scope: String::new(),
            category: "hyperparameter".into(),
            source: source.into(),
            checks: vec![],
        };
        let gold = Fingerprint {
            paper: String::new(),
            criteria: vec![
                crit(
                    "G1",
                    "epsilon is 0.1",
                    "We set the smoothing factor to 0.1.",
                ),
                crit("G2", "batch size 64", "Batches hold 64 examples."),
            ],
        };
        let found = Fingerprint {
            paper: String::new(),
            criteria: vec![
                crit(
                    "C1",
                    "The smoothing factor equals 0.1.",
                    "we set the smoothing factor to 0.1",
                ),
                crit("C2", "batch size 32", "Batches hold 64 examples."),
            ],
        };
        assert_eq!(recalled(&gold, &found), ["G1"]);
    }
}
