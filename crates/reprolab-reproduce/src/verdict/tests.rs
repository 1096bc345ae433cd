use serde_json::{Map, Value, json};

use super::*;
use crate::facts::extract;
use crate::observe::{ObservedFrame, ObservedWarning};

const LIB: &str = "/env/lib/python3.11/site-packages/torch/nn/functional.py";

fn frame(file: &str, function: &str, in_script: bool) -> ObservedFrame {
    ObservedFrame {
        file: file.into(),
        line: 3,
        function: function.into(),
        code: String::new(),
        in_script,
    }
}

fn exception(type_name: &str, message: &str, frames: Vec<ObservedFrame>) -> ObservedException {
    ObservedException {
        type_name: type_name.into(),
        module: "builtins".into(),
        message: message.into(),
        frames,
        raised_by: None,
        defined_in_script: false,
    }
}

fn obs(seed: u64, status: RunStatus) -> Observation {
    Observation {
        seed,
        status,
        exit_code: None,
        signal: None,
        exceptions: vec![],
        warnings: vec![],
        reported: vec![],
        literal_reports: vec![],
        output_tail: String::new(),
        duration_s: 1.0,
        peak_mb: 100,
    }
}

/// Not reproduced, for the reason `why` (a part of the summary).
fn rejected(v: &Verdict, why: &str) {
    assert!(
        !v.reproduced && v.summary().contains(why),
        "{}",
        v.summary()
    );
}

fn raising(e: ObservedException) -> Vec<Observation> {
    (1..=5)
        .map(|s| Observation {
            exceptions: vec![e.clone()],
            ..obs(s, RunStatus::Exception)
        })
        .collect()
}

fn reporting(values: &[Value]) -> Vec<Observation> {
    (1..=5)
        .map(|s| Observation {
            reported: values
                .iter()
                .map(|v| v.as_object().cloned().unwrap_or_else(Map::new))
                .collect(),
            ..obs(s, RunStatus::Ok)
        })
        .collect()
}

const BCE: &str = "```\nTraceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n  File \"/usr/lib/python3/site-packages/torch/nn/functional.py\", line 3095, in binary_cross_entropy\n    raise ValueError(\nValueError: Using a target size (torch.Size([128])) that is different to the input size (torch.Size([3200])) is deprecated. Please ensure they have the same size.\n```";

fn bce_message(target: u32, input: u32) -> String {
    format!(
        "Using a target size (torch.Size([{target}])) that is different to the input size (torch.Size([{input}])) is deprecated. Please ensure they have the same size."
    )
}

#[test]
fn the_library_raising_the_reported_error_reproduces_it() {
    let facts = extract(BCE);
    let e = exception(
        "ValueError",
        &bce_message(128, 3200),
        vec![
            frame("/tmp/reproduce.py", "<module>", true),
            frame(LIB, "binary_cross_entropy", false),
        ],
    );
    let v = judge(&facts, BCE, &raising(e));
    assert!(v.reproduced, "{v:?}");
    assert_eq!((v.showing, v.runs), (5, 5));
}

#[test]
fn other_shapes_another_type_or_no_error_do_not() {
    let facts = extract(BCE);
    let frames = vec![
        frame("/tmp/reproduce.py", "<module>", true),
        frame(LIB, "binary_cross_entropy", false),
    ];
    let v = judge(
        &facts,
        BCE,
        &raising(exception("ValueError", &bce_message(4, 3), frames.clone())),
    );
    assert!(!v.reproduced);
    assert!(
        v.summary().contains("(128, 3200) in that order"),
        "{}",
        v.summary()
    );

    let v = judge(
        &facts,
        BCE,
        &raising(exception("RuntimeError", &bce_message(128, 3200), frames)),
    );
    assert!(!v.reproduced);
    assert!(
        v.summary().contains("instead of ValueError"),
        "{}",
        v.summary()
    );

    let clean: Vec<Observation> = (1..=5).map(|s| obs(s, RunStatus::Ok)).collect();
    let v = judge(&facts, BCE, &clean);
    assert!(
        v.summary().contains("without raising ValueError"),
        "{}",
        v.summary()
    );
}

#[test]
fn an_error_the_script_makes_itself_is_rejected() {
    let facts = extract(BCE);
    let msg = bce_message(128, 3200);
    // Its own raise statement.
    let mut own = exception(
        "ValueError",
        &msg,
        vec![frame("/tmp/reproduce.py", "<module>", true)],
    );
    own.raised_by = Some("raise".into());
    let v = judge(&facts, BCE, &raising(own));
    rejected(&v, "own `raise`");
    // Its own exception class.
    let mut mock = exception(
        "ValueError",
        &msg,
        vec![frame(LIB, "binary_cross_entropy", false)],
    );
    mock.defined_in_script = true;
    assert!(
        judge(&facts, BCE, &raising(mock))
            .summary()
            .contains("defines ValueError itself")
    );
    // A re-implementation of the library function the traceback ends in.
    let reimpl = exception(
        "ValueError",
        &msg,
        vec![
            frame(LIB, "binary_cross_entropy", false),
            frame("/tmp/reproduce.py", "binary_cross_entropy", true),
        ],
    );
    assert!(
        judge(&facts, BCE, &raising(reimpl))
            .summary()
            .contains("re-implements")
    );
    // Raised somewhere else than the file the report's traceback ends in.
    let elsewhere = exception(
        "ValueError",
        &msg,
        vec![frame(
            "/env/site-packages/torch/nn/modules/loss.py",
            "forward",
            false,
        )],
    );
    assert!(
        judge(&facts, BCE, &raising(elsewhere))
            .summary()
            .contains("ends in functional.py")
    );
}

#[test]
fn a_symptom_in_a_minority_of_runs_is_not_reproduced_and_a_majority_is_flaky() {
    let facts = extract(BCE);
    let good = exception(
        "ValueError",
        &bce_message(128, 3200),
        vec![frame(LIB, "binary_cross_entropy", false)],
    );
    let mut runs = raising(good);
    for r in runs.iter_mut().take(3) {
        *r = obs(r.seed, RunStatus::Ok);
    }
    assert!(!judge(&facts, BCE, &runs).reproduced);
    runs[0] = raising(exception(
        "ValueError",
        &bce_message(128, 3200),
        vec![frame(LIB, "binary_cross_entropy", false)],
    ))[0]
        .clone();
    let v = judge(&facts, BCE, &runs);
    assert!(
        v.reproduced && v.reasons.iter().any(|r| r.contains("flaky")),
        "{v:?}"
    );
}

#[test]
fn limits_and_crashes_are_reported_as_such() {
    let facts = extract(BCE);
    let runs: Vec<Observation> = (1..=5).map(|s| obs(s, RunStatus::Timeout)).collect();
    let v = judge(&facts, BCE, &runs);
    rejected(&v, "timeout");
}

#[test]
fn warnings_must_come_from_the_library() {
    let text = "/x/torch/nn/modules/loss.py:608: UserWarning: Using a target size (torch.Size([4, 1])) that is different to the input size (torch.Size([4])).";
    let facts = extract(text);
    let warning = |by_script: bool| {
        ObservedWarning {
        category: "UserWarning".into(),
        message: "Using a target size (torch.Size([4, 1])) that is different to the input size (torch.Size([4])). This will likely lead to incorrect results".into(),
        file: "/env/site-packages/torch/nn/modules/loss.py".into(),
        line: 608,
        in_script: by_script,
        warned_by_script: by_script,
    }
    };
    let runs = |w: ObservedWarning| -> Vec<Observation> {
        (1..=5)
            .map(|s| Observation {
                warnings: vec![w.clone()],
                ..obs(s, RunStatus::Ok)
            })
            .collect()
    };
    assert!(judge(&facts, text, &runs(warning(false))).reproduced);
    let v = judge(&facts, text, &runs(warning(true)));
    rejected(&v, "warnings.warn");
}

#[test]
fn nan_needs_a_computed_value() {
    let text = "The loss becomes nan after the first step.";
    let facts = extract(text);
    let v = judge(
        &facts,
        text,
        &reporting(&[json!({"loss": 2.3}), json!({"loss": "nan"})]),
    );
    assert!(v.reproduced, "{v:?}");
    let v = judge(
        &facts,
        text,
        &reporting(&[json!({"loss": 2.3}), json!({"loss": 2.1})]),
    );
    assert!(!v.reproduced && v.summary().contains("finite"));
    let mut literal = reporting(&[json!({"loss": "nan"})]);
    for o in &mut literal {
        o.literal_reports = vec!["loss".into()];
    }
    let v = judge(&facts, text, &literal);
    rejected(&v, "literals");
}

#[test]
fn no_change_and_not_decreasing() {
    let text = "The weights of fc2 do not change between steps.";
    let facts = extract(text);
    let constant = reporting(&[
        json!({"fc2_weight_sum": 1.5}),
        json!({"fc2_weight_sum": 1.5}),
    ]);
    assert!(judge(&facts, text, &constant).reproduced);
    let zero = reporting(&[json!({"weight_change": 0.0})]);
    assert!(judge(&facts, text, &zero).reproduced);
    let moving = reporting(&[
        json!({"fc2_weight_sum": 1.5}),
        json!({"fc2_weight_sum": 1.2}),
    ]);
    assert!(!judge(&facts, text, &moving).reproduced);

    let text = "The loss is not decreasing at all.";
    let facts = extract(text);
    assert!(
        judge(
            &facts,
            text,
            &reporting(&[json!({"loss": 2.3}), json!({"loss": 2.31})])
        )
        .reproduced
    );
    assert!(
        !judge(
            &facts,
            text,
            &reporting(&[json!({"loss": 2.3}), json!({"loss": 1.1})])
        )
        .reproduced
    );
}

#[test]
fn a_stated_value_is_matched_within_five_percent() {
    let text = "Accuracy stays at 10% for every epoch; it should be above 90%.";
    let facts = extract(text);
    assert!(judge(&facts, text, &reporting(&[json!({"accuracy": 0.102})])).reproduced);
    let v = judge(&facts, text, &reporting(&[json!({"accuracy": 0.5})]));
    rejected(&v, "more than 5%");
    let v = judge(&facts, text, &reporting(&[json!({"loss": 0.1})]));
    rejected(&v, "named like");
}

#[test]
fn key_tokens_pick_identifying_parts() {
    let t = key_tokens("gelu(): argument 'approximate' must be str, not bool");
    assert!(
        t.contains(&"approximate".to_string()) && t.contains(&"gelu()".to_string()),
        "{t:?}"
    );
    let e = exact_tokens(
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 3",
    );
    assert_eq!(e, vec!["shape:3", "shape:4", "3"]);
    assert_eq!(
        exact_tokens("shapes cannot be multiplied (2708x7 and 256x256)"),
        vec!["dims:2708x7", "dims:256x256"]
    );
    assert_eq!(token_share("Error while processing rearrange-reduction pattern \"n -> n 1\".", "Error while processing rearrange-reduction pattern \"n -> n 1\".\n Input tensor shape: torch.Size([2]).").0, 1.0);
}

#[test]
fn swapped_sizes_or_another_message_with_the_same_names_do_not_match() {
    let stated = "Input 0 of layer \"dense\" is incompatible with the layer: expected axis -1 of input shape to have value 180, but received input with shape (32, 245)";
    let swapped = "Input 0 of layer \"dense\" is incompatible with the layer: expected axis -1 of input shape to have value 245, but received input with shape (32, 180)";
    assert_eq!(token_share(stated, stated).0, 1.0);
    let (share, missing) = token_share(stated, swapped);
    assert!(share < KEY_TOKEN_SHARE, "{share} {missing:?}");
    assert!(missing.iter().any(|m| m.contains("in that order")));

    let stated = "Arguments `target` and `output` must have the same shape up until the last dimension: target.shape=torch.Size([16, 3]), output.shape=torch.Size([16, 3])";
    let other = "Arguments `target` and `output` must have the same shape. Received: target.shape=torch.Size([16]), output.shape=torch.Size([16, 3])";
    assert!(token_share(stated, other).0 < KEY_TOKEN_SHARE);
}

#[test]
fn memory_sizes_addresses_and_durations_do_not_have_to_match() {
    let stated = "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 3.95 GiB total capacity; 2.10 GiB already allocated)";
    let here = "CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.70 GiB total capacity; 9.00 GiB already allocated)";
    assert_eq!(token_share(stated, here).0, 1.0);
    // The GPU index is not volatile: another device is another message.
    assert!(token_share(stated, &here.replace("GPU 0", "GPU 1")).0 < 1.0);
    assert_eq!(
        token_share(
            "cannot pickle <Net object at 0x7f3a2b1c>",
            "cannot pickle <Net object at 0x55d0e2>"
        )
        .0,
        1.0
    );
    assert_eq!(
        without_volatile("timed out after 30 seconds (1.5 ms per step, 3 s total)"),
        "timed out after <duration> (<duration> per step, 3 s total)"
    );
    // Shapes and plain numbers still count.
    assert!(
        token_share(
            "size mismatch: [4, 1] vs [4]",
            "size mismatch: [8, 1] vs [8]"
        )
        .0 < KEY_TOKEN_SHARE
    );
}

#[test]
fn a_silent_symptom_beside_a_warning_must_show_too() {
    let text = "/x/torch/nn/modules/loss.py:608: UserWarning: Using a target size (torch.Size([4, 1])) that is different to the input size (torch.Size([4])).\n\nAfter that warning the loss becomes nan within a few steps.";
    let facts = extract(text);
    assert_eq!(facts.symptom, Symptom::Warning);
    assert_eq!(facts.also, vec![Symptom::Nan]);
    let warned = |loss: Value| -> Vec<Observation> {
        (1..=5)
            .map(|s| Observation {
                warnings: vec![ObservedWarning {
                    category: "UserWarning".into(),
                    message: "Using a target size (torch.Size([4, 1])) that is different to the input size (torch.Size([4]))".into(),
                    file: "/env/site-packages/torch/nn/modules/loss.py".into(),
                    line: 608,
                    in_script: false,
                    warned_by_script: false,
                }],
                reported: vec![json!({"loss": loss.clone()}).as_object().cloned().unwrap()],
                ..obs(s, RunStatus::Ok)
            })
            .collect()
    };
    let v = judge(&facts, text, &warned(json!("nan")));
    assert!(v.reproduced, "{v:?}");
    assert!(
        v.expected.contains("and a computed value that is NaN"),
        "{}",
        v.expected
    );
    let v = judge(&facts, text, &warned(json!(0.7)));
    rejected(
        &v,
        "the warning shows, but not a computed value that is NaN",
    );

    // A NaN that only the warning's own message names is no second symptom.
    let own = extract(
        "/x/torch/autograd/anomaly.py:9: UserWarning: Function returned nan values in its 0th output.",
    );
    assert_eq!(own.symptom, Symptom::Warning);
    assert!(own.also.is_empty(), "{:?}", own.also);
}

#[test]
fn runs_that_ended_alike_are_one_group_in_the_order_first_seen() {
    let run = |seed: u64, shows: bool, reason: &str| RunJudgement {
        seed,
        shows,
        reason: reason.into(),
    };
    let v = Verdict {
        reproduced: true,
        symptom: Symptom::Error,
        expected: String::new(),
        runs: 4,
        showing: 3,
        per_run: vec![
            run(1, true, "raised"),
            run(2, false, "ran clean"),
            run(3, true, "raised"),
            run(4, true, "raised twice"),
        ],
        reasons: Vec::new(),
    };
    assert_eq!(
        v.run_groups(),
        [
            (true, "raised", vec![1, 3]),
            (false, "ran clean", vec![2]),
            (true, "raised twice", vec![4]),
        ]
    );
}
