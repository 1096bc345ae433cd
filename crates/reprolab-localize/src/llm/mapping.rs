//! Mapping an LLM's free-text reasons to fault types with layers.
//!
//! The study mapped GPT's answers by hand (58% of the items mapped to a fault type). reprolab
//! asks the model a second, structured question (the fault-type table and the config keys in,
//! JSON out: [`mapping_prompt`], [`read_mapping`]); when that answer is missing or unreadable
//! for an item, a keyword table maps it ([`keyword_map`]). Items that map to nothing are kept
//! as "unmapped" advice.

use std::collections::BTreeMap;

use reprolab_core::{FaultLabel, FaultType, SearchSpace};
use serde_json::Value;

/// Keywords of each fault type, matched in lower-cased text, most specific first: the first
/// type whose keyword matches wins a phrase, but an item can name several types.
const KEYWORDS: &[(FaultType, &[&str])] = &[
    (
        FaultType::HLR,
        &["learning rate", "learning-rate", "step size", " lr "],
    ),
    (
        FaultType::HBS,
        &["batch size", "batch-size", "batch_size", "mini-batch size"],
    ),
    (
        FaultType::HNE,
        &[
            "epoch",
            "train longer",
            "training longer",
            "more iterations",
            "underfit",
        ],
    ),
    (FaultType::BCI, &["bias init", "bias_init", "bias initiali"]),
    (
        FaultType::WCI,
        &[
            "initiali",
            "initializer",
            "weight init",
            "kernel_init",
            "zeros init",
        ],
    ),
    (
        FaultType::LCH,
        &[
            "loss function",
            "loss",
            "cross-entropy",
            "crossentropy",
            "cross entropy",
            "mean squared error",
            "hinge",
        ],
    ),
    (
        FaultType::OCH,
        &[
            "optimizer",
            "optimiser",
            "sgd",
            "adam",
            "rmsprop",
            "adagrad",
            "adadelta",
            "momentum",
        ],
    ),
    (
        FaultType::RAW,
        &["regulari", "weight decay", "l1", "l2 penalty"],
    ),
    (
        FaultType::LCF,
        &[
            "filter size",
            "kernel size",
            "kernel_size",
            "receptive field",
        ],
    ),
    (
        FaultType::LCN,
        &[
            "neurons",
            "units",
            "hidden size",
            "width of",
            "too narrow",
            "too few units",
        ],
    ),
    (
        FaultType::LRM,
        &[
            "add a layer",
            "add another layer",
            "more layers",
            "too shallow",
            "missing layer",
            "deeper",
        ],
    ),
    (
        FaultType::LAD,
        &[
            "too many layers",
            "remove a layer",
            "remove the layer",
            "redundant layer",
            "too deep",
        ],
    ),
    (
        FaultType::ARM,
        &[
            "no activation",
            "missing activation",
            "without activation",
            "lacks a non-linear",
            "lack of non-linear",
        ],
    ),
    (
        FaultType::ACH,
        &[
            "activation",
            "softmax",
            "sigmoid",
            "relu",
            "tanh",
            "selu",
            "elu",
            "softplus",
            "softsign",
            "linear output",
            "non-linearity",
            "nonlinearity",
        ],
    ),
    (
        FaultType::CPP,
        &[
            "normaliz",
            "normalis",
            "standardiz",
            "standardis",
            "preprocess",
            "scaling the input",
            "scale the input",
            "feature scaling",
            "one-hot",
        ],
    ),
];

/// Words that place a layer-specific fault in the output layer.
const OUTPUT_WORDS: &[&str] = &[
    "output layer",
    "last layer",
    "final layer",
    "output activation",
    "final activation",
    "last activation",
];

/// Config keys named in `text` as words (`act1`, `config["lr"]`): the labels of their
/// parameters.
fn named_params(text: &str, space: &SearchSpace) -> Vec<FaultLabel> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    space
        .iter()
        .filter(|p| words.contains(&p.name.as_str()))
        .filter_map(|p| p.label())
        .collect()
}

/// The layers of `fault`'s parameters in the space (sorted).
fn layers_of(space: &SearchSpace, fault: FaultType) -> Vec<u32> {
    let mut l: Vec<u32> = space.with_fault(fault).filter_map(|p| p.layer).collect();
    l.sort_unstable();
    l.dedup();
    l
}

/// The fault types a reason names, by config keys first, then by keywords. A layer-specific
/// type gets the output layer when the text speaks of it; otherwise no layer.
pub fn keyword_map(item: &str, space: &SearchSpace) -> Vec<FaultLabel> {
    let text = format!(" {} ", item.to_lowercase());
    let mut out = named_params(item, space);
    for (fault, words) in KEYWORDS {
        if out.iter().any(|l| l.fault == *fault) {
            continue;
        }
        if words.iter().any(|w| text.contains(w)) {
            let layered = !layers_of(space, *fault).is_empty();
            let layers = if layered && OUTPUT_WORDS.iter().any(|w| text.contains(w)) {
                layers_of(space, *fault)
                    .last()
                    .copied()
                    .into_iter()
                    .collect()
            } else {
                Vec::new()
            };
            out.push(FaultLabel::with_layers(*fault, layers));
        }
    }
    merge_labels(out)
}

/// One label per fault type, layers united.
pub fn merge_labels(labels: Vec<FaultLabel>) -> Vec<FaultLabel> {
    let mut by: BTreeMap<FaultType, Vec<u32>> = BTreeMap::new();
    let mut order = Vec::new();
    for l in labels {
        if !by.contains_key(&l.fault) {
            order.push(l.fault);
        }
        by.entry(l.fault).or_default().extend(l.layers);
    }
    order
        .into_iter()
        .map(|f| FaultLabel::with_layers(f, by.remove(&f).unwrap_or_default()))
        .collect()
}

/// The structured mapping question: the fault-type table, the config keys with their types
/// and layers, and the numbered items; the answer is asked as JSON.
pub fn mapping_prompt(items: &[String], space: &SearchSpace) -> String {
    let mut p = String::from(
        "Map each numbered reason below to the fault types it describes, using only this table:\n",
    );
    for t in FaultType::ALL {
        p.push_str(&format!("- {}: {}\n", t.code(), t.description()));
    }
    p.push_str("\nThe program's config keys, with the fault type and layer each belongs to:\n");
    for param in space.iter() {
        if let Some(label) = param.label() {
            p.push_str(&format!("- {}: {label}\n", param.name));
        }
    }
    p.push_str("\nReasons:\n");
    for (i, it) in items.iter().enumerate() {
        p.push_str(&format!("{}. {}\n", i + 1, it.trim()));
    }
    p.push_str(
        "\nAnswer only with JSON of this form, one entry per reason, an empty list when a reason \
fits no type: {\"items\": [{\"item\": 1, \"types\": [{\"type\": \"ACH\", \"layers\": [2]}]}]}",
    );
    p
}

/// Reads the mapping answer: item number (1-based) → labels. Entries with unknown types or
/// item numbers are skipped; a type given as a plain string (`"HLR"`, `"ACH(2)"`) is accepted.
pub fn read_mapping(answer: &Value, items: usize) -> BTreeMap<usize, Vec<FaultLabel>> {
    let mut out = BTreeMap::new();
    let list = answer
        .get("items")
        .and_then(Value::as_array)
        .or_else(|| answer.as_array());
    for entry in list.into_iter().flatten() {
        let Some(n) = entry
            .get("item")
            .and_then(Value::as_u64)
            .map(|n| n as usize)
        else {
            continue;
        };
        if n == 0 || n > items {
            continue;
        }
        let mut labels = Vec::new();
        for t in entry
            .get("types")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let parsed = match t {
                Value::String(s) => s.trim().parse::<FaultLabel>().ok(),
                Value::Object(_) => t
                    .get("type")
                    .and_then(Value::as_str)
                    .and_then(|c| c.trim().parse::<FaultType>().ok())
                    .map(|f| {
                        let layers = t
                            .get("layers")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_u64)
                            .map(|l| l as u32);
                        FaultLabel::with_layers(f, layers)
                    }),
                _ => None,
            };
            labels.extend(parsed);
        }
        out.insert(n, merge_labels(labels));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use reprolab_core::{Param, ParamKind};
    use serde_json::json;

    fn space() -> SearchSpace {
        let p = |name: &str, fault: FaultType, layer: Option<u32>| Param {
            name: name.into(),
            kind: ParamKind::Choice {
                values: vec![json!("a"), json!("b")],
            },
            fault: Some(fault),
            layer,
        };
        SearchSpace {
            params: vec![
                p("act0", FaultType::ACH, Some(0)),
                p("act1", FaultType::ACH, Some(1)),
                p("act2", FaultType::ACH, Some(2)),
                p("lr", FaultType::HLR, None),
                p("optimizer", FaultType::OCH, None),
                p("loss", FaultType::LCH, None),
                p("batch_size", FaultType::HBS, None),
                p("ki0", FaultType::WCI, Some(0)),
            ],
        }
    }

    /// Sorted label strings (the order of an item's labels carries no meaning).
    fn codes(labels: &[FaultLabel]) -> Vec<String> {
        let mut c: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        c.sort();
        c
    }

    #[test]
    fn keywords_map_typical_reasons() {
        let s = space();
        assert_eq!(
            codes(&keyword_map("The learning rate of 10 is far too high.", &s)),
            ["HLR"]
        );
        assert_eq!(
            codes(&keyword_map(
                "The output layer uses softmax on a single unit; use sigmoid instead.",
                &s
            )),
            ["ACH(2)"]
        );
        assert_eq!(
            codes(&keyword_map("config['act1'] should be relu", &s)),
            ["ACH(1)"]
        );
        assert_eq!(
            codes(&keyword_map(
                "Use binary cross-entropy as the loss and Adam as the optimizer",
                &s
            )),
            ["LCH", "OCH"]
        );
        assert_eq!(
            codes(&keyword_map(
                "Weights initialised to zeros break symmetry",
                &s
            )),
            ["WCI"]
        );
        assert!(keyword_map("The code has no docstrings.", &s).is_empty());
    }

    #[test]
    fn the_mapping_prompt_lists_types_keys_and_items() {
        let p = mapping_prompt(&["lr too high".into(), "use adam".into()], &space());
        assert!(p.contains("- HLR: wrong learning rate"));
        assert!(p.contains("- act2: ACH(2)"));
        assert!(p.contains("1. lr too high\n2. use adam\n"));
        assert!(p.contains("\"items\""));
    }

    #[test]
    fn mapping_answers_are_read_tolerantly() {
        let answer = json!({"items": [
            {"item": 1, "types": [{"type": "HLR"}]},
            {"item": 2, "types": ["ACH(1,2)", {"type": "ach", "layers": [0]}, {"type": "XYZ"}]},
            {"item": 3, "types": []},
            {"item": 9, "types": ["HBS"]},
            {"types": ["HBS"]}
        ]});
        let m = read_mapping(&answer, 3);
        assert_eq!(codes(&m[&1]), ["HLR"]);
        assert_eq!(codes(&m[&2]), ["ACH(0,1,2)"]);
        assert!(m[&3].is_empty());
        assert_eq!(m.len(), 3);
    }
}
