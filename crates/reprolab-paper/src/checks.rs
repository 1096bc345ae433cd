//! Static checks: a criterion's value and call checks decided from a directory's
//! [`CodeFacts`] (benchmarks/papers/README.md gives the rules). Nothing runs; a check that finds
//! nothing to look at decides nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::codefacts::{CallFact, CodeFacts, ValueFact};
use crate::fingerprint::{Absent, CallCheck, StaticCheck, ValueCheck};

/// What one check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    Undecided,
}

/// Which kind of checker decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Checker {
    Static,
    Execution,
    Judge,
}

impl Checker {
    pub fn as_str(self) -> &'static str {
        match self {
            Checker::Static => "static",
            Checker::Execution => "execution",
            Checker::Judge => "judge",
        }
    }
}

/// One check's result with its evidence (`file:line (scope): what was found`, an assertion's
/// message, a judge's reasoning).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub checker: Checker,
    pub outcome: Outcome,
    pub evidence: Vec<String>,
}

/// Shown at most, of many places that match.
const MAX_EVIDENCE: usize = 5;

pub fn check_static(check: &StaticCheck, facts: &CodeFacts) -> CheckResult {
    let (outcome, evidence) = match check {
        StaticCheck::Value(v) => check_value(v, &facts.values),
        StaticCheck::Call(c) => check_call(c, &facts.calls),
    };
    CheckResult {
        checker: Checker::Static,
        outcome,
        evidence,
    }
}

fn check_value(check: &ValueCheck, values: &[ValueFact]) -> (Outcome, Vec<String>) {
    let names: Vec<String> = check.names.iter().map(|n| name_key(n)).collect();
    let candidates: Vec<&ValueFact> = values
        .iter()
        .filter(|v| names.contains(&name_key(&v.name)) && within(&check.within, &v.scope))
        .collect();
    let show = |v: &ValueFact| format!("{}: {} = {}", v.place(), v.name, v.value);
    if let Some(hit) = candidates
        .iter()
        .find(|v| same_value(&v.value, &check.equals))
    {
        return (Outcome::Pass, vec![show(hit)]);
    }
    if candidates.is_empty() {
        return (
            Outcome::Undecided,
            vec![format!(
                "no constant named {}{}",
                check.names.join(" / "),
                scope_phrase(&check.within)
            )],
        );
    }
    let mut evidence = vec![format!("expected {}", check.equals)];
    evidence.extend(candidates.iter().take(MAX_EVIDENCE).map(|v| show(v)));
    (Outcome::Fail, evidence)
}

fn check_call(check: &CallCheck, calls: &[CallFact]) -> (Outcome, Vec<String>) {
    let candidates: Vec<&CallFact> = calls
        .iter()
        .filter(|c| same_callee(&c.callee, &check.callee) && within(&check.within, &c.scope))
        .collect();
    let show = |c: &CallFact| format!("{}: {}({})", c.place(), c.callee, arguments(c));
    if candidates.is_empty() {
        let why = format!("no call to {}{}", check.callee, scope_phrase(&check.within));
        let outcome = match check.absent {
            Some(Absent::Fail) => Outcome::Fail,
            _ => Outcome::Undecided,
        };
        return (outcome, vec![why]);
    }
    if let Some(hit) = candidates.iter().find(|c| has_args(c, check)) {
        return (Outcome::Pass, vec![show(hit)]);
    }
    let expected: Vec<String> = check.args.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut evidence = vec![format!(
        "expected {}({})",
        check.callee,
        expected.join(", ")
    )];
    evidence.extend(candidates.iter().take(MAX_EVIDENCE).map(|c| show(c)));
    (Outcome::Fail, evidence)
}

fn has_args(call: &CallFact, check: &CallCheck) -> bool {
    check.args.iter().all(|(key, want)| {
        let found = match key.parse::<usize>() {
            Ok(i) => call.args.get(i),
            Err(_) => call.kwargs.get(key),
        };
        found.is_some_and(|v| same_value(v, want))
    })
}

fn arguments(call: &CallFact) -> String {
    let shown = |v: &Value| {
        if v.is_null() {
            "…".to_string()
        } else {
            v.to_string()
        }
    };
    call.args
        .iter()
        .map(shown)
        .chain(call.kwargs.iter().map(|(k, v)| format!("{k}={}", shown(v))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Names compare without case, and `-` the same as `_` (`--weight-decay` is `weight_decay`).
fn name_key(name: &str) -> String {
    name.trim_start_matches('-')
        .to_lowercase()
        .replace('-', "_")
}

fn within(scopes: &[String], scope: &str) -> bool {
    scopes.is_empty() || scopes.iter().any(|s| scope.contains(s.as_str()))
}

fn scope_phrase(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(" in {}", scopes.join(" / "))
    }
}

/// Numbers within a relative 1e-6 (`1e-3` and `0.001`, `2` and `2.0` are the same), strings
/// without case, lists (Python tuples and lists) item by item, the rest exactly.
pub fn same_value(found: &Value, want: &Value) -> bool {
    match (found, want) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs())
        }
        (Value::String(a), Value::String(b)) => a.eq_ignore_ascii_case(b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (a, b) => a == b,
    }
}

/// A call's resolved callee names the function of a check when one dotted name ends the other
/// (`SGD` in code written with `from torch.optim import *`; `optim.SGD` in a check), or when
/// both start in the same package and end in the same name (`torch.optim.sgd.SGD` is
/// `torch.optim.SGD`).
pub fn same_callee(found: &str, want: &str) -> bool {
    let want = expand_alias(want);
    let f: Vec<&str> = found.split('.').collect();
    let w: Vec<&str> = want.split('.').collect();
    let (short, long) = if f.len() <= w.len() {
        (&f, &w)
    } else {
        (&w, &f)
    };
    long.ends_with(short) || (f.len() > 1 && w.len() > 1 && f[0] == w[0] && f.last() == w.last())
}

/// A check may name a callee the way code usually imports it (`F.relu`, `nn.Linear`,
/// `np.clip`); the facts have the full names.
fn expand_alias(callee: &str) -> String {
    const ALIASES: &[(&str, &str)] = &[
        ("F.", "torch.nn.functional."),
        ("nn.", "torch.nn."),
        ("np.", "numpy."),
    ];
    for (short, full) in ALIASES {
        if let Some(rest) = callee.strip_prefix(short) {
            return format!("{full}{rest}");
        }
    }
    callee.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(scope: &str, name: &str, v: Value) -> ValueFact {
        ValueFact {
            file: "m.py".into(),
            line: 3,
            scope: scope.into(),
            name: name.into(),
            value: v,
            kind: "assign".into(),
        }
    }

    fn call(callee: &str, kwargs: Value) -> CallFact {
        CallFact {
            file: "train.py".into(),
            line: 9,
            scope: "main".into(),
            callee: callee.into(),
            kwargs: kwargs.as_object().unwrap().clone(),
            args: vec![json!(null), json!(64)],
        }
    }

    fn value_check(names: &[&str], equals: Value, within: &[&str]) -> StaticCheck {
        StaticCheck::Value(ValueCheck {
            names: names.iter().map(|s| s.to_string()).collect(),
            equals,
            within: within.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn facts(values: Vec<ValueFact>, calls: Vec<CallFact>) -> CodeFacts {
        CodeFacts {
            values,
            calls,
            ..CodeFacts::default()
        }
    }

    #[test]
    fn a_value_passes_fails_or_decides_nothing() {
        let f = facts(
            vec![
                value("Loss.__init__", "epsilon", json!(0.1)),
                value("", "eps", json!(1e-8)),
            ],
            vec![],
        );
        let check = |c| check_static(&c, &f).outcome;
        assert_eq!(
            check(value_check(&["eps", "EPSILON"], json!(0.1), &[])),
            Outcome::Pass
        );
        assert_eq!(
            check(value_check(&["epsilon"], json!(0.2), &[])),
            Outcome::Fail
        );
        // The stability constant at module level is not the loss's epsilon.
        assert_eq!(
            check(value_check(&["eps", "epsilon"], json!(0.1), &["Loss"])),
            Outcome::Pass
        );
        assert_eq!(
            check(value_check(&["eps"], json!(0.1), &["Loss"])),
            Outcome::Undecided
        );
        assert_eq!(
            check(value_check(&["eps"], json!(0.1), &["Model"])),
            Outcome::Undecided
        );
        assert_eq!(
            check(value_check(&["lr"], json!(0.1), &[])),
            Outcome::Undecided
        );
        let failed = check_static(&value_check(&["epsilon"], json!(0.2), &[]), &f);
        assert_eq!(failed.evidence[0], "expected 0.2");
        assert_eq!(failed.evidence[1], "m.py:3 (Loss.__init__): epsilon = 0.1");
    }

    #[test]
    fn values_compare_as_numbers_names_without_case_or_dashes() {
        assert!(same_value(&json!(0.001), &json!(1e-3)));
        assert!(same_value(&json!(2), &json!(2.0)));
        assert!(!same_value(&json!(0.1), &json!(0.10001)));
        assert!(same_value(&json!("AdamW"), &json!("adamw")));
        assert!(!same_value(&json!(true), &json!(1)));
        assert!(same_value(&json!([0.9, 0.98]), &json!([0.9, 0.980])));
        assert!(!same_value(&json!([0.9, 0.98]), &json!([0.9, 0.999])));
        assert_eq!(name_key("--Weight-Decay"), "weight_decay");
    }

    #[test]
    fn a_call_matches_its_callee_and_arguments() {
        let f = facts(
            vec![],
            vec![
                call("torch.optim.SGD", json!({"lr": 0.1, "momentum": 0.9})),
                call("torch.nn.Linear", json!({})),
            ],
        );
        let c = |callee: &str, args: Value, absent| {
            check_static(
                &StaticCheck::Call(CallCheck {
                    callee: callee.into(),
                    args: args.as_object().unwrap().clone(),
                    within: vec![],
                    absent,
                }),
                &f,
            )
            .outcome
        };
        assert_eq!(
            c("optim.SGD", json!({"momentum": 0.9}), None),
            Outcome::Pass
        );
        assert_eq!(
            c("torch.optim.SGD", json!({"momentum": 0.8}), None),
            Outcome::Fail
        );
        assert_eq!(c("nn.Linear", json!({"1": 64}), None), Outcome::Pass);
        assert_eq!(c("torch.optim.Adam", json!({}), None), Outcome::Undecided);
        assert_eq!(
            c(
                "torch.nn.utils.clip_grad_norm_",
                json!({}),
                Some(Absent::Fail)
            ),
            Outcome::Fail
        );
    }

    #[test]
    fn callees_match_by_dotted_suffix_or_package_and_name() {
        assert!(same_callee("torch.optim.SGD", "SGD"));
        assert!(same_callee("SGD", "torch.optim.SGD"));
        assert!(same_callee("torch.optim.sgd.SGD", "torch.optim.SGD"));
        assert!(same_callee(
            "torch.nn.functional.cross_entropy",
            "F.cross_entropy"
        ));
        assert!(same_callee(
            "torch.nn.CrossEntropyLoss",
            "nn.CrossEntropyLoss"
        ));
        assert!(!same_callee("torch.optim.Adam", "torch.optim.SGD"));
        assert!(!same_callee("mylib.SGD2", "SGD"));
        assert!(!same_callee("numpy.clip", "torch.clip"));
    }
}
