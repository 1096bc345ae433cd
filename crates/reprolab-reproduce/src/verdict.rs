//! The verdict: does what the runs showed match the symptom the report describes? Rules, no
//! LLM (docs/reproduce.md explains each with examples):
//!
//! * **error**: the same exception class, at least 75% of the report's key diagnostic tokens
//!   (shapes, quoted names, numbers, dotted or snake_case identifiers) in the message, raised
//!   through the file the report's traceback ends in when that is library code, through
//!   `backward` when the report's traceback went through it; and raised by library code: not
//!   by the script's own `raise`/`assert`, not an exception class the script defines, not inside
//!   a script function named like the library function the report's traceback ends in;
//! * **warning**: the same category and key tokens, not issued by the script's `warnings.warn`,
//!   and the silent symptom the report states beside it (NaN, no change), if any;
//! * **nan**: a computed (non-literal) reported value is NaN or Inf;
//! * **no-change**: a reported series stays constant (or, for "does not decrease", its last value
//!   is not below its first), or a reported `*change*`/`*update*`/`*delta*` value is zero;
//! * **value**: the mean over the runs of a reported metric named like the report's is within 5%
//!   of the value the report states.
//!
//! A symptom must show in a majority of the runs (each with its own seed).

use serde::Serialize;

use crate::facts::{ChangeClaim, Facts, StatedError, StatedValue, Symptom};
use crate::observe::{Observation, ObservedException, RunStatus, first_line, short_path};

/// Share of the report's key tokens an observed message must contain.
pub const KEY_TOKEN_SHARE: f64 = 0.75;
/// Share of the report's plain words (four letters or more) an observed message must contain.
pub const WORD_SHARE: f64 = 0.6;
/// Relative tolerance of the value rule (RepGen's 5%).
pub const VALUE_TOLERANCE: f64 = 0.05;

/// The judgement of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunJudgement {
    pub seed: u64,
    pub shows: bool,
    /// What was observed, and why it does or does not match.
    pub reason: String,
}

/// The judgement over all runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub reproduced: bool,
    pub symptom: Symptom,
    /// What the rule looked for.
    pub expected: String,
    pub runs: usize,
    pub showing: usize,
    pub per_run: Vec<RunJudgement>,
    /// Why it is not reproduced (or notes when it is).
    pub reasons: Vec<String>,
}

impl Verdict {
    /// `reproduced (5/5 runs): ...` / `not reproduced (0/5 runs): ...`.
    pub fn summary(&self) -> String {
        let head = if self.reproduced {
            "reproduced"
        } else {
            "not reproduced"
        };
        let why = self
            .reasons
            .first()
            .cloned()
            .or_else(|| self.per_run.first().map(|r| r.reason.clone()))
            .unwrap_or_default();
        format!("{head} ({}/{} runs): {why}", self.showing, self.runs)
    }

    /// The runs that ended the same way (whether they show the symptom, and why) as one group
    /// with their seeds, in the order first seen.
    pub fn run_groups(&self) -> Vec<(bool, &str, Vec<u64>)> {
        let mut groups: Vec<(bool, &str, Vec<u64>)> = Vec::new();
        for r in &self.per_run {
            match groups
                .iter_mut()
                .find(|(s, why, _)| *s == r.shows && *why == r.reason)
            {
                Some(g) => g.2.push(r.seed),
                None => groups.push((r.shows, &r.reason, vec![r.seed])),
            }
        }
        groups
    }
}

/// Judge `runs` against the report's `facts`.
pub fn judge(facts: &Facts, report_text: &str, runs: &[Observation]) -> Verdict {
    let (expected, per_run, aggregate) = match facts.symptom {
        Symptom::Error => {
            let e = facts
                .primary_error()
                .expect("an error symptom has an error");
            (
                format!("{}: {}", e.qualified, e.message),
                runs.iter().map(|o| judge_error(e, o)).collect(),
                None,
            )
        }
        Symptom::Warning => {
            let w = &facts.warnings[0];
            let mut expected = format!("{}: {}", w.category, w.message);
            let mut per_run: Vec<RunJudgement> = runs
                .iter()
                .map(|o| judge_warning(&w.category, &w.message, o))
                .collect();
            // A silent symptom stated beside the warning must show too: the warning alone is
            // not the bug the report describes.
            for also in &facts.also {
                let (what, judged) = silent_rule(*also, facts, report_text, runs);
                expected.push_str(&format!(", and {what}"));
                for (mine, other) in per_run.iter_mut().zip(judged) {
                    if mine.shows && !other.shows {
                        *mine = RunJudgement {
                            shows: false,
                            reason: format!("the warning shows, but not {what}: {}", other.reason),
                            ..other
                        };
                    }
                }
            }
            (expected, per_run, None)
        }
        Symptom::Nan | Symptom::NoChange => {
            let (what, per_run) = silent_rule(facts.symptom, facts, report_text, runs);
            (what, per_run, None)
        }
        Symptom::Value => {
            let stated: Vec<&StatedValue> = facts.observed_values().collect();
            let what = stated
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" or ");
            let (per_run, aggregate) = judge_value(&stated, runs);
            (
                format!("{what} (mean over the runs, within 5%)"),
                per_run,
                Some(aggregate),
            )
        }
        Symptom::Unknown => {
            let per_run = runs
                .iter()
                .map(|o| RunJudgement {
                    seed: o.seed,
                    shows: false,
                    reason: o.headline(),
                })
                .collect();
            return Verdict {
                reproduced: false,
                symptom: Symptom::Unknown,
                expected: "nothing the rules can check".into(),
                runs: runs.len(),
                showing: 0,
                per_run,
                reasons: vec![
                    "the report states no exception, warning, NaN, unchanged value or number to \
                     check: the rules cannot decide (an LLM judge's opinion is recorded \
                     separately when a model is given)"
                        .into(),
                ],
            };
        }
    };
    let showing = per_run.iter().filter(|r: &&RunJudgement| r.shows).count();
    let majority = runs.len() / 2 + 1;
    let (reproduced, mut reasons) = match aggregate {
        Some((ok, why)) => (ok && !runs.is_empty(), vec![why]),
        None => (showing >= majority && !runs.is_empty(), Vec::new()),
    };
    if runs.is_empty() {
        reasons.push("no runs".into());
    } else if !reproduced
        && aggregate_is_none(facts)
        && let Some(first) = per_run.iter().find(|r| !r.shows)
    {
        reasons.push(first.reason.clone());
    }
    if reproduced && showing < runs.len() && aggregate_is_none(facts) {
        reasons.push(format!(
            "flaky: the symptom showed in {showing} of {} runs",
            runs.len()
        ));
    }
    Verdict {
        reproduced,
        symptom: facts.symptom,
        expected,
        runs: runs.len(),
        showing,
        per_run,
        reasons,
    }
}

/// What a per-run silent rule (NaN, no change) looks for, and each run's judgement.
fn silent_rule(
    symptom: Symptom,
    facts: &Facts,
    report_text: &str,
    runs: &[Observation],
) -> (String, Vec<RunJudgement>) {
    match symptom {
        Symptom::Nan => (
            "a computed value that is NaN or Inf".to_string(),
            runs.iter().map(|o| judge_nan(o, report_text)).collect(),
        ),
        _ => {
            let claim = facts.change_claim.unwrap_or(ChangeClaim::Constant);
            let what = match claim {
                ChangeClaim::Constant => "a reported value that does not change",
                ChangeClaim::NotDecreasing => "a reported value that does not decrease",
            };
            (
                what.to_string(),
                runs.iter()
                    .map(|o| judge_no_change(claim, o, report_text))
                    .collect(),
            )
        }
    }
}

fn aggregate_is_none(facts: &Facts) -> bool {
    facts.symptom != Symptom::Value
}

fn run(o: &Observation, shows: bool, reason: impl Into<String>) -> RunJudgement {
    RunJudgement {
        seed: o.seed,
        shows,
        reason: reason.into(),
    }
}

/// A run that ended by a limit or a crash shows no symptom; say so.
fn abnormal(o: &Observation) -> Option<RunJudgement> {
    match o.status {
        RunStatus::Timeout
        | RunStatus::Oom
        | RunStatus::OutputLimit
        | RunStatus::DiskLimit
        | RunStatus::Crashed
        | RunStatus::NotStarted => Some(run(o, false, o.headline())),
        _ => None,
    }
}

fn is_library_file(file: &str) -> bool {
    file.contains("site-packages/")
        || file.contains("dist-packages/")
        || [
            "/torch/",
            "/keras/",
            "/tensorflow/",
            "/numpy/",
            "/lib/python3",
        ]
        .iter()
        .any(|m| file.contains(m))
}

fn basename(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}

fn judge_error(stated: &StatedError, o: &Observation) -> RunJudgement {
    if let Some(j) = abnormal(o) {
        return j;
    }
    let Some(e) = o.exceptions.iter().find(|e| e.type_name == stated.name) else {
        return run(
            o,
            false,
            match o.exceptions.first() {
                Some(_) => format!("raised {} instead of {}", o.headline(), stated.name),
                None => format!(
                    "finished ({}) without raising {}",
                    o.headline(),
                    stated.name
                ),
            },
        );
    };
    if let Some(why) = self_made(stated, e) {
        return run(o, false, why);
    }
    let (share, missing) = token_share(&stated.message, &e.message);
    if share < KEY_TOKEN_SHARE {
        return run(
            o,
            false,
            format!(
                "{}: {} — the message lacks the report's {}",
                e.qualified(),
                first_line(&e.message),
                missing.join(", ")
            ),
        );
    }
    if let Some(last) = stated.frames.last().filter(|f| is_library_file(&f.file)) {
        let name = basename(&last.file);
        if !e.frames.iter().any(|f| basename(&f.file) == name) {
            return run(
                o,
                false,
                format!(
                    "{} was raised through {}, but the report's traceback ends in {name}",
                    e.type_name,
                    e.last_frame()
                        .map(|f| short_path(&f.file))
                        .unwrap_or_default()
                ),
            );
        }
    }
    if stated
        .frames
        .iter()
        .any(|f| f.function.contains("backward"))
        && !e
            .frames
            .iter()
            .any(|f| f.function.contains("backward") || f.code.contains("backward"))
    {
        return run(
            o,
            false,
            format!(
                "{} was raised outside backward(), where the report's traceback has it",
                e.type_name
            ),
        );
    }
    run(o, true, o.headline())
}

/// Why an exception the script produced itself does not count, if it does not.
fn self_made(stated: &StatedError, e: &ObservedException) -> Option<String> {
    if e.defined_in_script {
        return Some(format!(
            "the script defines {} itself; the report's exception comes from the library",
            e.type_name
        ));
    }
    let last = e.last_frame()?;
    if !last.in_script {
        return None;
    }
    if let Some(stmt) = &e.raised_by {
        return Some(format!(
            "the script's own `{stmt}` statement (line {}) raised {}: a reproduction must get it \
             from the library",
            last.line, e.type_name
        ));
    }
    let library_fn = stated.frames.last().filter(|f| is_library_file(&f.file))?;
    (last.function == library_fn.function).then(|| {
        format!(
            "{} was raised inside the script's own `{}`, which re-implements the library function \
             the report's traceback ends in",
            e.type_name, last.function
        )
    })
}

/// A message with what differs between machines and runs made neutral: addresses (`0x7f3a…`),
/// amounts of memory (`20.00 MiB`, `3.95 GiB total capacity`) and durations (`12.5 s`,
/// `30 seconds`), so that "CUDA out of memory. Tried to allocate 20.00 MiB" matches the same
/// error on a machine of another size.
pub fn without_volatile(message: &str) -> String {
    static VOLATILE: std::sync::LazyLock<[(regex::Regex, &str); 3]> =
        std::sync::LazyLock::new(|| {
            [
                (regex::Regex::new(r"\b0x[0-9a-fA-F]+\b").unwrap(), "0x…"),
                (
                    regex::Regex::new(r"\b\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes)\b").unwrap(),
                    "<memory>",
                ),
                (
                    regex::Regex::new(r"\b\d+(?:\.\d+)?\s*(?:ms|seconds?|secs?)\b").unwrap(),
                    "<duration>",
                ),
            ]
        });
    let mut text = message.to_string();
    for (pattern, neutral) in VOLATILE.iter() {
        text = pattern.replace_all(&text, *neutral).into_owned();
    }
    text
}

/// Numbers, shapes and `AxB` sizes of a message, in order (`shape:1,256`, `dims:2708x7`, `3`).
pub fn exact_tokens(message: &str) -> Vec<String> {
    static EXACT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?:torch\.Size\(\s*)?[\[(]\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*[\])]\)?|\b\d+(?:x\d+)+\b|-?\b\d+(?:\.\d+)?\b",
        )
        .unwrap()
    });
    EXACT
        .find_iter(message)
        .map(|m| {
            let t = m.as_str();
            if t.starts_with(['[', '(']) || t.starts_with("torch") {
                format!("shape:{}", crate::facts::normalise_shape(t))
            } else if t.contains('x') {
                format!("dims:{t}")
            } else {
                t.to_string()
            }
        })
        .collect()
}

/// The words of a message that identify it besides its numbers: quoted text, and identifiers
/// that are dotted, snake_case, CamelCase or called.
pub fn key_tokens(message: &str) -> Vec<String> {
    static CALL: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[A-Za-z_][\w.]*\(\)").unwrap());
    let mut tokens: Vec<String> = Vec::new();
    let mut push = |t: String| {
        if !t.is_empty() && !tokens.contains(&t) && t.parse::<f64>().is_err() {
            tokens.push(t);
        }
    };
    for q in ['\'', '"', '`'] {
        let parts: Vec<&str> = message.split(q).collect();
        if parts.len() >= 3 {
            for inner in parts.iter().skip(1).step_by(2).take(parts.len() / 2) {
                push(normalise_space(inner));
            }
        }
    }
    for m in CALL.find_iter(message) {
        push(m.as_str().to_string());
    }
    let rest = CALL
        .replace_all(&crate::facts::strip_shapes(message), " ")
        .into_owned();
    for word in rest.split(|c: char| c.is_whitespace() || ",;:()[]{}'\"`=".contains(c)) {
        let w = word.trim_end_matches(['.', '!', '?']);
        let inner_caps = w.chars().skip(1).any(|c| c.is_ascii_uppercase())
            && w.chars().any(|c| c.is_ascii_lowercase());
        let dotted = w.contains('.') && w.chars().any(|c| c.is_ascii_alphabetic());
        if w.contains('_') || dotted || inner_caps {
            push(w.to_string());
        }
    }
    tokens
}

fn normalise_space(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Length of the longest common subsequence.
fn lcs(a: &[String], b: &[String]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut prev = 0;
        for (j, y) in b.iter().enumerate() {
            let keep = row[j + 1];
            row[j + 1] = if x == y {
                prev + 1
            } else {
                row[j + 1].max(row[j])
            };
            prev = keep;
        }
    }
    row[b.len()]
}

/// How much of `stated` an `observed` message shows: the numbers and shapes in the same order
/// (swapped sizes do not match; every shape must be there), the identifying words anywhere,
/// and, so that a different message with the same names does not pass, most of the plain
/// words. Returns the share and what is missing.
pub fn token_share(stated: &str, observed: &str) -> (f64, Vec<String>) {
    let (stated, observed) = (&without_volatile(stated), &without_volatile(observed));
    let observed_norm = normalise_space(observed);
    let (exact_s, exact_o) = (exact_tokens(stated), exact_tokens(observed));
    let keys = key_tokens(stated);
    let missing_keys: Vec<String> = keys
        .iter()
        .filter(|k| !observed_norm.contains(k.as_str()))
        .map(|k| format!("`{k}`"))
        .collect();
    let in_order = lcs(&exact_s, &exact_o);
    let mut missing = missing_keys.clone();
    if in_order < exact_s.len() {
        let shown: Vec<String> = exact_s
            .iter()
            .map(|t| {
                t.trim_start_matches("shape:")
                    .trim_start_matches("dims:")
                    .to_string()
            })
            .collect();
        missing.push(format!(
            "numbers and shapes ({}) in that order",
            shown.join(", ")
        ));
    }
    let total = keys.len() + exact_s.len();
    let key_share = if total == 0 {
        1.0
    } else {
        (keys.len() - missing_keys.len() + in_order) as f64 / total as f64
    };
    let words: Vec<String> = stated
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.len() >= 4)
        .map(str::to_lowercase)
        .collect();
    let lower = observed_norm.to_lowercase();
    let absent: Vec<&String> = words
        .iter()
        .filter(|w| !lower.contains(w.as_str()))
        .collect();
    let word_share = if words.is_empty() {
        1.0
    } else {
        1.0 - absent.len() as f64 / words.len() as f64
    };
    // Shapes are the key diagnostic information of a DL error: all of them, in order.
    let is_shape = |t: &&String| t.starts_with("shape:") || t.starts_with("dims:");
    let shapes_s: Vec<String> = exact_s.iter().filter(is_shape).cloned().collect();
    let shapes_o: Vec<String> = exact_o.iter().filter(is_shape).cloned().collect();
    if lcs(&shapes_s, &shapes_o) < shapes_s.len() {
        return (key_share.min(0.5), missing);
    }
    if word_share < WORD_SHARE {
        let few: Vec<&str> = absent.iter().take(6).map(|w| w.as_str()).collect();
        missing.push(format!("the words {}", few.join(", ")));
        return (word_share.min(key_share), missing);
    }
    (key_share, missing)
}

fn judge_warning(category: &str, message: &str, o: &Observation) -> RunJudgement {
    if let Some(j) = abnormal(o) {
        return j;
    }
    let candidates: Vec<_> = o
        .warnings
        .iter()
        .filter(|w| w.category == category)
        .collect();
    let best = candidates
        .iter()
        .map(|w| (token_share(message, &w.message).0, w))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((share, w)) if share >= KEY_TOKEN_SHARE => {
            if w.warned_by_script {
                run(
                    o,
                    false,
                    format!(
                        "the script's own warnings.warn (line {}) issued the {category}; a \
                         reproduction must get it from the library",
                        w.line
                    ),
                )
            } else {
                run(
                    o,
                    true,
                    format!(
                        "{category}: {} ({})",
                        first_line(&w.message),
                        short_path(&w.file)
                    ),
                )
            }
        }
        Some((_, w)) => run(
            o,
            false,
            format!("a {category} with another text: {}", first_line(&w.message)),
        ),
        None => run(
            o,
            false,
            format!(
                "no {category} ({} warnings in all; the run: {})",
                o.warnings.len(),
                o.headline()
            ),
        ),
    }
}

/// Reported names to look at: those the report mentions when there are any, else all.
fn relevant_names(o: &Observation, report_text: &str) -> Vec<String> {
    let names = o.reported_names();
    let lower = report_text.to_lowercase();
    let mentioned: Vec<String> = names
        .iter()
        .filter(|n| {
            name_tokens(n)
                .iter()
                .any(|t| t.len() >= 3 && lower.contains(t.as_str()))
        })
        .cloned()
        .collect();
    if mentioned.is_empty() {
        names
    } else {
        mentioned
    }
}

fn no_values_reason(o: &Observation) -> String {
    if !o.literal_reports.is_empty() {
        format!(
            "the script reports {} as literals, which do not count ({})",
            o.literal_reports.join(", "),
            o.headline()
        )
    } else if o.status == RunStatus::Exception {
        format!("raised {} before reporting values", o.headline())
    } else {
        format!("reported no values with reprolab.report ({})", o.headline())
    }
}

fn judge_nan(o: &Observation, report_text: &str) -> RunJudgement {
    if let Some(j) = abnormal(o) {
        return j;
    }
    let names = relevant_names(o, report_text);
    if names.is_empty() {
        return run(o, false, no_values_reason(o));
    }
    for name in &names {
        let series = o.series(name);
        if let Some(i) = series.iter().position(|v| !v.is_finite()) {
            return run(
                o,
                true,
                format!(
                    "{name} is {} at report {} of {}",
                    series[i],
                    i + 1,
                    series.len()
                ),
            );
        }
    }
    run(
        o,
        false,
        format!("every reported value is finite ({})", names.join(", ")),
    )
}

fn judge_no_change(claim: ChangeClaim, o: &Observation, report_text: &str) -> RunJudgement {
    if let Some(j) = abnormal(o) {
        return j;
    }
    let names = relevant_names(o, report_text);
    if names.is_empty() {
        return run(o, false, no_values_reason(o));
    }
    let mut seen = Vec::new();
    for name in &names {
        let series: Vec<f64> = o
            .series(name)
            .into_iter()
            .filter(|v| v.is_finite())
            .collect();
        let Some((&first, &last)) = series.first().zip(series.last()) else {
            continue;
        };
        let lower = name.to_lowercase();
        if series.len() == 1 {
            let zero_change = ["change", "delta", "diff", "update", "grad"]
                .iter()
                .any(|w| lower.contains(w))
                && first.abs() <= 1e-12;
            if zero_change {
                return run(o, true, format!("{name} = {first}"));
            }
            seen.push(format!("{name} = {first}"));
            continue;
        }
        let (lo, hi) = series
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        let constant = hi - lo <= 1e-9 * first.abs().max(1.0);
        let not_decreasing = last >= first - 1e-3 * first.abs();
        let shows = constant || (claim == ChangeClaim::NotDecreasing && not_decreasing);
        let desc = format!(
            "{name} from {first} to {last} over {} reports",
            series.len()
        );
        if shows {
            return run(
                o,
                true,
                if constant {
                    format!("{desc}, constant")
                } else {
                    desc
                },
            );
        }
        seen.push(desc);
    }
    run(o, false, format!("values change: {}", seen.join("; ")))
}

/// Words of a name: `num_params` → [num, params], `valAcc` → [val, acc]; with synonyms.
fn name_tokens(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    for c in name.chars() {
        if !c.is_alphanumeric() || (c.is_uppercase() && !cur.is_empty()) {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur).to_lowercase());
            }
            if c.is_alphanumeric() {
                cur.push(c);
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        words.push(cur.to_lowercase());
    }
    let synonyms: &[(&str, &str)] = &[
        ("acc", "accuracy"),
        ("params", "parameters"),
        ("param", "parameters"),
        ("num", "number"),
        ("grad", "gradient"),
        ("grads", "gradients"),
    ];
    let mut out = words.clone();
    for w in &words {
        for (a, b) in synonyms {
            if w == a {
                out.push(b.to_string());
            } else if w == b {
                out.push(a.to_string());
            }
        }
    }
    out
}

fn names_match(metric: &str, name: &str) -> bool {
    let m = name_tokens(metric);
    let n = name_tokens(name);
    m.iter().any(|t| t.len() >= 2 && n.contains(t))
}

fn judge_value(
    stated: &[&StatedValue],
    runs: &[Observation],
) -> (Vec<RunJudgement>, (bool, String)) {
    let mut per_run = Vec::new();
    let mut best: Option<(bool, String)> = None;
    for v in stated {
        let mut finals = Vec::new();
        let mut name_used = None;
        for o in runs {
            let name = o
                .reported_names()
                .into_iter()
                .find(|n| names_match(&v.metric, n));
            let last = name.as_ref().and_then(|n| o.series(n).last().copied());
            if let Some(n) = name {
                name_used.get_or_insert(n);
            }
            if let Some(x) = last {
                finals.push(x);
            }
        }
        let Some(name) = name_used else {
            continue;
        };
        let finite: Vec<f64> = finals.iter().copied().filter(|x| x.is_finite()).collect();
        if finite.is_empty() {
            best.get_or_insert((false, format!("{name}: no finite value reported")));
            continue;
        }
        let mut mean = finite.iter().sum::<f64>() / finite.len() as f64;
        if v.percent && mean.abs() <= 1.0 && v.value.abs() > 1.0 {
            mean *= 100.0;
        }
        let close = |x: f64| (x - v.value).abs() <= VALUE_TOLERANCE * v.value.abs().max(1e-9);
        let ok = close(mean);
        let why = format!(
            "{name}: mean {mean:.4} over {} runs vs the report's {} ({})",
            finite.len(),
            v.value,
            if ok {
                "within 5%"
            } else {
                "more than 5% apart"
            }
        );
        if per_run.is_empty() {
            per_run = runs
                .iter()
                .map(|o| {
                    let last = o.series(&name).last().copied();
                    match last {
                        Some(x) => {
                            let shown = if v.percent && x.abs() <= 1.0 && v.value.abs() > 1.0 {
                                x * 100.0
                            } else {
                                x
                            };
                            run(o, close(shown), format!("{name} = {x}"))
                        }
                        None => run(o, false, no_values_reason(o)),
                    }
                })
                .collect();
        }
        if ok {
            return (per_run, (true, why));
        }
        best.get_or_insert((false, why));
    }
    if per_run.is_empty() {
        per_run = runs
            .iter()
            .map(|o| run(o, false, no_values_reason(o)))
            .collect();
    }
    let fallback = (
        false,
        format!(
            "no reported value is named like {}",
            stated
                .iter()
                .map(|v| v.metric.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    );
    (per_run, best.unwrap_or(fallback))
}

#[cfg(test)]
mod tests;
