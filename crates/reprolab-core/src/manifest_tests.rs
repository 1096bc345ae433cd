use std::fs;
use std::path::Path;

use serde_json::json;
use tempfile::TempDir;

use super::*;

const MANIFEST: &str = r#"name = "digits-mlp"
description = "MLP on scikit-learn digits"
task = "classification"
framework = "pytorch"
config = "config.json"

[dataset]
name = "digits"
description = "scikit-learn digits, 8x8 images, 10 classes"

[entry]
callable = "train.py:train"

[metric]
name = "accuracy"
goal = "max"

[limits]
timeout_s = 300
memory_mb = 2048
output_mb = 8

[space]
lr         = { type = "float", low = 1e-6, high = 10.0, fault = "HLR" }
lr2        = { type = "log-float", low = 1e-6, high = 10.0 }
batch_size = { type = "choice", values = [16, 32, 64, 128, 256, 512], fault = "HBS" }
act0       = { type = "choice", values = ["relu", "tanh"], fault = "ACH", layer = 0 }
layer1     = { type = "int", low = 0, high = 2, fault = "LAD", layer = 1 }

[fix]
config = "fixed.json"
faults = ["ACH(1)", "HLR"]
"#;

const CONFIG: &str = r#"{"lr": 0.01, "lr2": 0.001, "batch_size": 32, "act0": "tanh", "layer1": 1}"#;
const FIXED: &str = r#"{"lr": 0.001, "lr2": 0.001, "batch_size": 32, "act0": "relu", "layer1": 1}"#;

/// A subject directory holding `manifest`, `config.json` = `config`, `fixed.json` and
/// `train.py`.
fn subject(manifest: &str, config: &str) -> TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(MANIFEST_FILE), manifest).unwrap();
    fs::write(d.path().join("config.json"), config).unwrap();
    fs::write(d.path().join("fixed.json"), FIXED).unwrap();
    fs::write(
        d.path().join("train.py"),
        "def train(config, seed):\n    return {}\n",
    )
    .unwrap();
    d
}

/// The manifest with `from` replaced by `to` (which must occur).
fn edit(from: &str, to: &str) -> String {
    assert!(MANIFEST.contains(from), "{from:?} not in the manifest");
    MANIFEST.replacen(from, to, 1)
}

fn load_err(manifest: &str, config: &str) -> ManifestError {
    let d = subject(manifest, config);
    match Subject::load(d.path()) {
        Ok(_) => panic!("manifest should be rejected:\n{manifest}"),
        Err(e) => e,
    }
}

/// The one issue of the manifest with `from` replaced by `to`, which must be `kind` at `key`.
fn rejected(from: &str, to: &str, key: &str, kind: IssueKind) -> Issue {
    let e = load_err(&edit(from, to), CONFIG);
    let i = single(&e).clone();
    assert_eq!(
        (i.key.as_str(), i.kind),
        (key, kind),
        "{from:?} -> {to:?}: {e}"
    );
    i
}

/// The only issue of an `Invalid` error.
fn single(e: &ManifestError) -> &Issue {
    assert_eq!(e.issues().len(), 1, "expected one issue, got:\n{e}");
    &e.issues()[0]
}

fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).unwrap()].matches('\n').count() + 1
}

#[test]
fn loads_a_valid_subject_with_every_field() {
    let d = subject(MANIFEST, CONFIG);
    let s = Subject::load(d.path()).unwrap();
    let dir = fs::canonicalize(d.path()).unwrap();
    assert_eq!(s.dir, dir);
    assert!(s.dir.is_absolute());
    assert_eq!(s.manifest_path, dir.join("reprolab.toml"));
    assert_eq!(s.name, "digits-mlp");
    assert_eq!(s.description, "MLP on scikit-learn digits");
    assert_eq!(s.task, Task::Classification);
    assert_eq!(s.framework, Framework::Pytorch);
    assert_eq!(
        s.dataset,
        Dataset {
            name: "digits".into(),
            description: "scikit-learn digits, 8x8 images, 10 classes".into()
        }
    );
    assert_eq!(
        s.entry,
        Entry::Callable {
            file: "train.py".into(),
            function: "train".into()
        }
    );
    assert_eq!(s.entry.spec(), "train.py:train");
    assert_eq!(
        s.metric,
        Metric {
            name: "accuracy".into(),
            goal: Goal::Max
        }
    );
    assert_eq!(s.config_path, dir.join("config.json"));
    assert_eq!(s.config, Config::from_json_str(CONFIG).unwrap());
    assert_eq!(
        s.limits,
        Limits {
            timeout_s: 300.0,
            memory_mb: 2048,
            output_mb: 8,
            disk_mb: 8192
        }
    );

    // The space, in manifest order.
    let names: Vec<&str> = s.space.names().collect();
    assert_eq!(names, ["lr", "lr2", "batch_size", "act0", "layer1"]);
    let p = |n: &str| s.space.get(n).unwrap();
    assert_eq!(
        p("lr").kind,
        ParamKind::Float {
            low: 1e-6,
            high: 10.0
        }
    );
    assert_eq!(p("lr").fault, Some(FaultType::HLR));
    assert_eq!(p("lr").layer, None);
    assert_eq!(
        p("lr2").kind,
        ParamKind::LogFloat {
            low: 1e-6,
            high: 10.0
        }
    );
    assert_eq!(p("lr2").fault, None);
    assert_eq!(
        p("batch_size").kind,
        ParamKind::Choice {
            values: vec![
                json!(16),
                json!(32),
                json!(64),
                json!(128),
                json!(256),
                json!(512)
            ]
        }
    );
    assert_eq!(p("batch_size").fault, Some(FaultType::HBS));
    assert_eq!(
        p("act0").kind,
        ParamKind::Choice {
            values: vec![json!("relu"), json!("tanh")]
        }
    );
    assert_eq!(
        (p("act0").fault, p("act0").layer),
        (Some(FaultType::ACH), Some(0))
    );
    assert_eq!(p("layer1").kind, ParamKind::Int { low: 0, high: 2 });
    assert_eq!(
        (p("layer1").fault, p("layer1").layer),
        (Some(FaultType::LAD), Some(1))
    );
    assert_eq!(p("act0").label().unwrap().to_string(), "ACH(0)");

    let fix = s.fix.as_ref().unwrap();
    assert_eq!(fix.config_path, dir.join("fixed.json"));
    assert_eq!(fix.config, Config::from_json_str(FIXED).unwrap());
    assert_eq!(
        fix.faults,
        vec![
            FaultLabel::with_layers(FaultType::ACH, [1]),
            FaultLabel::new(FaultType::HLR)
        ]
    );

    // Loading through the manifest path gives the same subject.
    let again = Subject::load(&d.path().join("reprolab.toml")).unwrap();
    assert_eq!(again, s);
}

#[test]
fn optional_parts_take_their_defaults() {
    let manifest = r#"
name = "tiny"
task = "regression"
framework = "keras"
config = "c.json"
dataset = { name = "line" }
entry = { command = "{python} train.py --config {config} --seed {seed} --out {result} --tmp {workdir} {{literal}}" }
metric = { name = "mae", goal = "min" }
[space]
"#;
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(MANIFEST_FILE), manifest).unwrap();
    fs::write(d.path().join("c.json"), "{}").unwrap();
    let s = Subject::load(d.path()).unwrap();
    assert_eq!(s.description, "");
    assert_eq!(s.dataset.description, "");
    assert_eq!(s.task, Task::Regression);
    assert_eq!(s.framework, Framework::Keras);
    assert_eq!(s.metric.goal, Goal::Min);
    assert_eq!(s.limits, Limits::default());
    assert_eq!(Limits::default().timeout_s, 600.0);
    assert_eq!(Limits::default().memory_mb, 4096);
    assert_eq!(Limits::default().output_mb, 16);
    assert!(s.fix.is_none());
    assert!(s.space.is_empty() && s.config.is_empty());
    let Entry::Command { template } = &s.entry else {
        panic!("expected a command entry")
    };
    let cmd = expand_command(
        template,
        &[
            ("python", "/py"),
            ("config", "c.json"),
            ("seed", "3"),
            ("result", "r.json"),
            ("workdir", "/w"),
        ],
    )
    .unwrap();
    assert_eq!(
        cmd,
        "/py train.py --config c.json --seed 3 --out r.json --tmp /w {literal}"
    );
}

#[test]
fn missing_manifest() {
    let d = tempfile::tempdir().unwrap();
    let e = Subject::load(d.path()).unwrap_err();
    match &e {
        ManifestError::NotFound { path } => assert_eq!(path, &d.path().join("reprolab.toml")),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("reprolab.toml: no such file"), "{e}");
    let e = Subject::load(&d.path().join("nope")).unwrap_err();
    assert!(matches!(e, ManifestError::NotFound { .. }), "{e:?}");
}

#[test]
fn toml_syntax_error_has_line_and_column() {
    let manifest = edit("goal = \"max\"", "goal = \"max");
    let e = load_err(&manifest, CONFIG);
    let ManifestError::Syntax {
        line,
        column,
        message,
        file,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*line, line_of(&manifest, "goal = \"max"));
    assert!(*column >= 8, "column {column}");
    assert!(!message.is_empty());
    assert!(file.ends_with("reprolab.toml"));
    let shown = e.to_string();
    assert!(
        shown.contains(&format!("reprolab.toml:{line}:{column}: TOML syntax error")),
        "{shown}"
    );

    // Duplicate keys are syntax errors too.
    let e = load_err(
        &edit("name = \"accuracy\"", "name = \"accuracy\"\nname = \"x\""),
        CONFIG,
    );
    assert!(matches!(e, ManifestError::Syntax { .. }), "{e:?}");
}

#[test]
fn unknown_keys_are_rejected_everywhere_with_suggestions() {
    let i = rejected(
        "task =",
        "taks = \"x\"\ntask =",
        "taks",
        IssueKind::UnknownKey,
    );
    assert_eq!(i.hint.as_deref(), Some("did you mean 'task'?"));
    assert_eq!(i.position, Some(Position { line: 3, column: 1 }));

    for (from, to, key, hint) in [
        (
            "timeout_s = 300",
            "timout_s = 300",
            "limits.timout_s",
            Some("did you mean 'timeout_s'?"),
        ),
        (
            "goal = \"max\"",
            "goal = \"max\"\ngaol = 1",
            "metric.gaol",
            Some("did you mean 'goal'?"),
        ),
        (
            "name = \"digits\"",
            "name = \"digits\"\nsize = 3",
            "dataset.size",
            None,
        ),
        (
            "callable = \"train.py:train\"",
            "callable = \"train.py:train\"\nargs = []",
            "entry.args",
            None,
        ),
        ("faults = [", "extra = 1\nfaults = [", "fix.extra", None),
        (
            "high = 2, fault = \"LAD\"",
            "high = 2, falut = \"LAD\"",
            "space.layer1.falut",
            Some("did you mean 'fault'?"),
        ),
        // A key of another parameter type.
        (
            "values = [\"relu\", \"tanh\"],",
            "values = [\"relu\", \"tanh\"], low = 0,",
            "space.act0.low",
            None,
        ),
    ] {
        let e = load_err(&edit(from, to), CONFIG);
        let i = e
            .issues()
            .iter()
            .find(|i| i.kind == IssueKind::UnknownKey)
            .unwrap_or_else(|| panic!("{e}"));
        assert_eq!(i.key, key, "{e}");
        assert_eq!(i.hint.as_deref(), hint, "{e}");
        assert!(i.position.is_some(), "{e}");
    }
}

#[test]
fn enum_typos_name_file_key_found_and_expected() {
    let manifest = edit("task = \"classification\"", "task = \"clasification\"");
    let d = subject(&manifest, CONFIG);
    let e = Subject::load(d.path()).unwrap_err();
    let i = single(&e);
    assert_eq!(i.kind, IssueKind::InvalidValue);
    let file = d.path().join("reprolab.toml");
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3:8: key 'task': found \"clasification\", expected one of \"classification\", \"regression\" (did you mean \"classification\"?)",
            file.display()
        )
    );
    let e = load_err(
        &edit("framework = \"pytorch\"", "framework = \"tensorflow\""),
        CONFIG,
    );
    assert_eq!(single(&e).key, "framework");
    let e = load_err(&edit("goal = \"max\"", "goal = \"maximize\""), CONFIG);
    assert_eq!(single(&e).key, "metric.goal");
    let e = load_err(&edit("type = \"log-float\"", "type = \"logfloat\""), CONFIG);
    let i = single(&e);
    assert_eq!(i.key, "space.lr2.type");
    assert_eq!(i.hint.as_deref(), Some("did you mean \"log-float\"?"));
}

#[test]
fn wrong_types() {
    for (from, to, key, found) in [
        (
            "task = \"classification\"",
            "task = 5",
            "task",
            "5 (an integer)",
        ),
        (
            "name = \"digits-mlp\"",
            "name = [\"a\"]",
            "name",
            "[\"a\"] (an array)",
        ),
        (
            "memory_mb = 2048",
            "memory_mb = 1.5",
            "limits.memory_mb",
            "1.5 (a float)",
        ),
        (
            "memory_mb = 2048",
            "memory_mb = 2048.0",
            "limits.memory_mb",
            "2048.0 (a float)",
        ),
        (
            "timeout_s = 300",
            "timeout_s = \"5m\"",
            "limits.timeout_s",
            "\"5m\" (a string)",
        ),
        (
            "low = 1e-6, high = 10.0, fault = \"HLR\"",
            "low = \"small\", high = 10.0, fault = \"HLR\"",
            "space.lr.low",
            "\"small\" (a string)",
        ),
        (
            "low = 0, high = 2",
            "low = 0.5, high = 2",
            "space.layer1.low",
            "0.5 (a float)",
        ),
        (
            "values = [16, 32, 64, 128, 256, 512]",
            "values = 16",
            "space.batch_size.values",
            "16 (an integer)",
        ),
        (
            "layer = 0",
            "layer = \"0\"",
            "space.act0.layer",
            "\"0\" (a string)",
        ),
        (
            "faults = [\"ACH(1)\", \"HLR\"]",
            "faults = \"HLR\"",
            "fix.faults",
            "\"HLR\" (a string)",
        ),
        (
            "faults = [\"ACH(1)\", \"HLR\"]",
            "faults = [\"HLR\", 3]",
            "fix.faults[1]",
            "3 (an integer)",
        ),
        (
            "lr2        = { type = \"log-float\", low = 1e-6, high = 10.0 }",
            "lr2 = 0.001",
            "space.lr2",
            "0.001 (a float)",
        ),
    ] {
        let e = load_err(&edit(from, to), CONFIG);
        let i = e
            .issues()
            .iter()
            .find(|i| i.kind == IssueKind::WrongType)
            .unwrap_or_else(|| panic!("{e}"));
        assert_eq!(i.key, key, "{e}");
        assert_eq!(i.found.as_deref(), Some(found), "{e}");
        assert!(i.position.is_some(), "{e}");
    }
    // A string where a table belongs.
    let manifest = edit("[metric]\nname = \"accuracy\"\ngoal = \"max\"\n", "").replace(
        "config = \"config.json\"\n",
        "config = \"config.json\"\nmetric = \"accuracy\"\n",
    );
    let e = load_err(&manifest, CONFIG);
    let i = single(&e);
    assert_eq!((i.key.as_str(), i.kind), ("metric", IssueKind::WrongType));
    assert_eq!(i.found.as_deref(), Some("\"accuracy\" (a string)"));
    assert_eq!(
        i.position,
        Some(Position {
            line: 6,
            column: 10
        })
    );
}

#[test]
fn missing_required_keys() {
    for (from, to, key) in [
        ("name = \"digits-mlp\"\n", "", "name"),
        ("task = \"classification\"\n", "", "task"),
        ("framework = \"pytorch\"\n", "", "framework"),
        ("config = \"config.json\"\n", "", "config"),
        ("goal = \"max\"\n", "", "metric.goal"),
        ("name = \"accuracy\"\n", "", "metric.name"),
        ("name = \"digits\"\n", "", "dataset.name"),
        ("[entry]\ncallable = \"train.py:train\"\n", "", "entry"),
        ("type = \"int\", ", "", "space.layer1.type"),
        ("values = [\"relu\", \"tanh\"], ", "", "space.act0.values"),
        ("high = 2, ", "", "space.layer1.high"),
        ("config = \"fixed.json\"\n", "", "fix.config"),
    ] {
        let e = load_err(&edit(from, to), CONFIG);
        let i = e
            .issue_at(key)
            .unwrap_or_else(|| panic!("no issue at {key}:\n{e}"));
        assert_eq!(i.kind, IssueKind::MissingKey, "{e}");
        assert_eq!(i.found, None);
        assert!(
            i.to_string()
                .contains(&format!("key '{key}': missing, expected ")),
            "{i}"
        );
    }
    // Without [space] the config cannot be checked, but nothing else is reported.
    let manifest = MANIFEST[..MANIFEST.find("[space]").unwrap()].to_string();
    let e = load_err(&manifest, CONFIG);
    assert_eq!(single(&e).key, "space");
    // A missing key inside a table points at the table.
    let e = load_err(&edit("goal = \"max\"\n", ""), CONFIG);
    assert_eq!(
        single(&e).position.unwrap().line,
        line_of(MANIFEST, "[metric]")
    );
}

#[test]
fn entry_needs_exactly_one_of_callable_and_command() {
    let i = rejected(
        "callable = \"train.py:train\"",
        "callable = \"train.py:train\"\ncommand = \"{python} train.py\"",
        "entry",
        IssueKind::Conflict,
    );
    assert!(
        i.to_string()
            .contains("found both 'callable' and 'command', expected exactly one of"),
        "{i}"
    );

    let i = rejected(
        "callable = \"train.py:train\"",
        "",
        "entry",
        IssueKind::Conflict,
    );
    assert!(i.to_string().contains("found neither"), "{i}");
}

#[test]
fn callable_must_be_file_colon_function() {
    for (spec, why) in [
        ("train.py", "no ':'"),
        ("train:train", ".py"),
        ("../x/train.py:train", "inside the subject directory"),
        ("/abs/train.py:train", "inside the subject directory"),
        ("train.py:", "identifier"),
        ("train.py:1train", "identifier"),
    ] {
        let i = rejected(
            "\"train.py:train\"",
            &quote(spec),
            "entry.callable",
            IssueKind::InvalidValue,
        );
        assert_eq!(i.found.as_deref(), Some(quote(spec).as_str()));
        assert!(i.hint.as_deref().unwrap().contains(why), "{spec}: {i}");
    }
}

#[test]
fn entry_file_must_exist() {
    let i = rejected(
        "\"train.py:train\"",
        "\"model.py:train\"",
        "entry.callable",
        IssueKind::MissingFile,
    );
    assert!(
        i.to_string()
            .contains("expected an existing file \"model.py\""),
        "{i}"
    );
    assert!(i.hint.as_deref().unwrap().contains("model.py"), "{i}");
}

#[test]
fn unknown_placeholders_are_rejected() {
    let e = load_err(
        &edit(
            "callable = \"train.py:train\"",
            "command = \"{pyhton} train.py --config {config} --seed {seed} --gpu {gpu}\"",
        ),
        CONFIG,
    );
    assert_eq!(e.issues().len(), 2, "{e}");
    let i = &e.issues()[0];
    assert_eq!(
        (i.key.as_str(), i.kind),
        ("entry.command", IssueKind::InvalidValue)
    );
    assert_eq!(
        i.found.as_deref(),
        Some("the unknown placeholder '{pyhton}'")
    );
    assert_eq!(i.hint.as_deref(), Some("did you mean '{python}'?"));
    assert!(
        i.expected
            .contains("{python}, {config}, {seed}, {result}, {workdir}"),
        "{i}"
    );
    assert_eq!(
        e.issues()[1].found.as_deref(),
        Some("the unknown placeholder '{gpu}'")
    );

    let e = load_err(
        &edit(
            "callable = \"train.py:train\"",
            "command = \"{python train.py\"",
        ),
        CONFIG,
    );
    assert!(
        single(&e).hint.as_deref().unwrap().contains("never closed"),
        "{e}"
    );
    let e = load_err(
        &edit("callable = \"train.py:train\"", "command = \"  \""),
        CONFIG,
    );
    assert_eq!(single(&e).kind, IssueKind::InvalidValue);
    assert!(expand_command("{python} }", &[("python", "p")]).is_err());
    assert!(expand_command("{seed}", &[]).is_err());
}

#[test]
fn config_file_must_exist() {
    let i = rejected(
        "config = \"config.json\"",
        "config = \"conf.json\"",
        "config",
        IssueKind::MissingFile,
    );
    assert!(i.file.ends_with("reprolab.toml"));
    assert_eq!(i.found.as_deref(), Some("\"conf.json\""));
    assert!(i.hint.as_deref().unwrap().contains("conf.json"), "{i}");
    assert_eq!(i.position.unwrap().line, 5);

    let e = load_err(
        &edit("config = \"fixed.json\"", "config = \"nofix.json\""),
        CONFIG,
    );
    assert_eq!(single(&e).key, "fix.config");
    assert_eq!(single(&e).kind, IssueKind::MissingFile);
}

#[test]
fn config_must_be_a_json_object() {
    let e = load_err(MANIFEST, "{\"lr\": 0.01,\n \"lr2\": }");
    let i = single(&e);
    assert_eq!(i.kind, IssueKind::InvalidJson);
    assert!(i.file.ends_with("config.json"));
    assert_eq!(i.key, "");
    assert_eq!(i.position.unwrap().line, 2);
    assert!(i.to_string().contains("config.json:2:"), "{i}");
    assert!(
        i.found.as_deref().unwrap().starts_with("invalid JSON"),
        "{i}"
    );

    let e = load_err(MANIFEST, "[1, 2]");
    let i = single(&e);
    assert_eq!(
        (i.kind, i.found.as_deref()),
        (IssueKind::InvalidJson, Some("a JSON array"))
    );
    assert!(i.expected.contains("JSON object"));
}

#[test]
fn config_keys_must_match_the_space() {
    let config = r#"{"lr": 0.01, "lr2": 0.001, "batch_size": 32, "act0": "tanh", "layer_1": 1}"#;
    let d = subject(MANIFEST, config);
    let e = Subject::load(d.path()).unwrap_err();
    assert_eq!(e.issues().len(), 2, "{e}");
    let (a, b) = (&e.issues()[0], &e.issues()[1]);
    assert_eq!((a.key.as_str(), a.kind), ("layer_1", IssueKind::NotInSpace));
    assert_eq!(a.hint.as_deref(), Some("did you mean 'layer1'?"));
    let col = config.find("\"layer_1\"").unwrap() + 1;
    assert_eq!(
        a.position,
        Some(Position {
            line: 1,
            column: col
        })
    );
    assert_eq!(
        (b.key.as_str(), b.kind),
        ("layer1", IssueKind::MissingFromConfig)
    );
    assert_eq!(
        b.to_string(),
        format!(
            "{}: key 'layer1': missing, expected an integer in [0, 2] (space.layer1)",
            d.path().join("config.json").display()
        )
    );
}

#[test]
fn config_values_must_lie_in_their_domain_and_all_issues_are_reported() {
    let config = r#"{
  "lr": 11,
  "lr2": 0,
  "batch_size": 48,
  "act0": "sigmoid",
  "layer1": 2.5
}"#;
    let d = subject(MANIFEST, config);
    let e = Subject::load(d.path()).unwrap_err();
    let keys: Vec<&str> = e.issues().iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["lr", "lr2", "batch_size", "act0", "layer1"], "{e}");
    assert!(e.issues().iter().all(|i| i.kind == IssueKind::OutOfDomain));
    let cfg = d.path().join("config.json");
    let lines: Vec<String> = e.to_string().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(
        lines[2],
        format!(
            "{}:4:3: key 'batch_size': found 48, expected one of [16, 32, 64, 128, 256, 512] (space.batch_size)",
            cfg.display()
        )
    );
    assert!(
        lines[0].ends_with("key 'lr': found 11, expected a number in [1e-6, 10] (space.lr)"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with(
            "key 'lr2': found 0, expected a number in [1e-6, 10] (log scale) (space.lr2)"
        ),
        "{}",
        lines[1]
    );
    assert!(
        lines[3].ends_with("found \"sigmoid\", expected one of [\"relu\", \"tanh\"] (space.act0)"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].ends_with("key 'layer1': found 2.5, expected an integer in [0, 2] (space.layer1)"),
        "{}",
        lines[4]
    );

    // An int param given a float is wrong, a float param given an int is fine.
    let ok = r#"{"lr": 1, "lr2": 1, "batch_size": 512, "act0": "relu", "layer1": 0}"#;
    let d = subject(MANIFEST, ok);
    assert!(Subject::load(d.path()).is_ok());
    let e = load_err(MANIFEST, &ok.replace("\"layer1\": 0", "\"layer1\": 0.0"));
    assert_eq!(single(&e).key, "layer1");
}

#[test]
fn bad_ranges_and_choices() {
    let i = rejected(
        "low = 0, high = 2",
        "low = 3, high = 2",
        "space.layer1.low",
        IssueKind::InvalidValue,
    );
    assert_eq!(
        i.to_string().split_once(": ").unwrap().1,
        "key 'space.layer1.low': found 3, expected an integer at most high (2)"
    );

    let e = load_err(
        &edit(
            "low = 1e-6, high = 10.0, fault",
            "low = 20.0, high = 10.0, fault",
        ),
        CONFIG,
    );
    let i = single(&e);
    assert_eq!(i.key, "space.lr.low");
    assert!(
        i.to_string()
            .ends_with("found 20.0, expected a number at most high (10)"),
        "{i}"
    );

    for low in ["0", "-1.0", "0.0"] {
        let i = rejected(
            "\"log-float\", low = 1e-6",
            &format!("\"log-float\", low = {low}"),
            "space.lr2.low",
            IssueKind::InvalidValue,
        );
        assert!(i.expected.contains("> 0"), "{i}");
    }

    let i = rejected(
        "values = [\"relu\", \"tanh\"]",
        "values = []",
        "space.act0.values",
        IssueKind::InvalidValue,
    );
    assert_eq!(i.found.as_deref(), Some("[]"));

    let e = load_err(
        &edit(
            "values = [\"relu\", \"tanh\"]",
            "values = [\"relu\", \"relu\"]",
        ),
        CONFIG,
    );
    assert_eq!(single(&e).key, "space.act0.values[1]");

    let e = load_err(
        &edit(
            "low = 1e-6, high = 10.0, fault",
            "low = nan, high = 10.0, fault",
        ),
        CONFIG,
    );
    assert_eq!(single(&e).key, "space.lr.low");
}

#[test]
fn faults_and_layers() {
    let i = rejected(
        "fault = \"HBS\"",
        "fault = \"HBZ\"",
        "space.batch_size.fault",
        IssueKind::InvalidValue,
    );
    assert_eq!(i.found.as_deref(), Some("\"HBZ\""));
    assert!(i.expected.contains("HBS, HLR, HNE"), "{i}");
    assert!(i.hint.is_some());

    rejected(
        ", fault = \"ACH\", layer = 0",
        ", layer = 0",
        "space.act0.layer",
        IssueKind::Conflict,
    );

    let i = rejected(
        "fault = \"ACH\", layer = 0",
        "fault = \"HLR\", layer = 0",
        "space.act0.layer",
        IssueKind::InvalidValue,
    );
    assert!(i.expected.contains("concerns no particular layer"), "{i}");

    let e = load_err(&edit("layer = 0", "layer = -1"), CONFIG);
    assert_eq!(single(&e).key, "space.act0.layer");
}

#[test]
fn fix_is_checked() {
    // Fix config outside the space's domain.
    let d = subject(MANIFEST, CONFIG);
    fs::write(
        d.path().join("fixed.json"),
        r#"{"lr": 0.001, "lr2": 0.001, "batch_size": 33, "act0": "relu"}"#,
    )
    .unwrap();
    let e = Subject::load(d.path()).unwrap_err();
    assert_eq!(e.issues().len(), 2, "{e}");
    assert!(e.issues().iter().all(|i| i.file.ends_with("fixed.json")));
    assert_eq!(e.issues()[0].key, "batch_size");
    assert_eq!(e.issues()[1].kind, IssueKind::MissingFromConfig);

    // Malformed fault labels.
    let e = load_err(
        &edit(
            "faults = [\"ACH(1)\", \"HLR\"]",
            "faults = [\"ACH(1\", \"HLR\", \"XYZ\"]",
        ),
        CONFIG,
    );
    assert_eq!(e.issues().len(), 2, "{e}");
    let i = &e.issues()[0];
    assert_eq!(
        (i.key.as_str(), i.kind),
        ("fix.faults[0]", IssueKind::InvalidValue)
    );
    assert_eq!(i.found.as_deref(), Some("\"ACH(1\""));
    assert!(i.hint.as_deref().unwrap().contains("missing ')'"), "{i}");
    assert_eq!(e.issues()[1].key, "fix.faults[2]");
    let col = MANIFEST
        .lines()
        .find(|l| l.starts_with("faults"))
        .unwrap()
        .find('[')
        .unwrap()
        + 2;
    assert_eq!(i.position.unwrap().column, col);

    // faults may be left out.
    let d = subject(&edit("faults = [\"ACH(1)\", \"HLR\"]", ""), CONFIG);
    assert!(
        Subject::load(d.path())
            .unwrap()
            .fix
            .unwrap()
            .faults
            .is_empty()
    );
}

#[test]
fn limits_must_be_positive() {
    for (from, to, key) in [
        ("timeout_s = 300", "timeout_s = 0", "limits.timeout_s"),
        ("timeout_s = 300", "timeout_s = -1.5", "limits.timeout_s"),
        ("timeout_s = 300", "timeout_s = inf", "limits.timeout_s"),
        ("memory_mb = 2048", "memory_mb = 0", "limits.memory_mb"),
        ("output_mb = 8", "output_mb = -8", "limits.output_mb"),
        // Typos too large for the kernel are refused here, not by every evaluation.
        (
            "memory_mb = 2048",
            "memory_mb = 99999999999999",
            "limits.memory_mb",
        ),
        ("timeout_s = 300", "timeout_s = 1e12", "limits.timeout_s"),
    ] {
        let i = rejected(from, to, key, IssueKind::InvalidValue);
        assert!(i.expected.contains("positive"), "{i}");
    }
    let d = subject(&edit("timeout_s = 300", "timeout_s = 0.5"), CONFIG);
    assert_eq!(Subject::load(d.path()).unwrap().limits.timeout_s, 0.5);
}

#[test]
fn the_config_must_be_inside_the_subject() {
    for outside in ["/etc/passwd", "../config.json", "a/../../b.json"] {
        let i = rejected(
            "config = \"config.json\"",
            &format!("config = \"{outside}\""),
            "config",
            IssueKind::InvalidValue,
        );
        assert!(i.expected.contains("inside the subject directory"), "{i}");
    }
}

#[test]
fn names_and_strings_are_validated() {
    let e = load_err(
        &edit("name = \"digits-mlp\"", "name = \"digits mlp\""),
        CONFIG,
    );
    assert_eq!(single(&e).key, "name");
    let e = load_err(&edit("name = \"accuracy\"", "name = \"\""), CONFIG);
    assert_eq!(single(&e).key, "metric.name");
}

#[test]
fn many_problems_are_reported_together_in_file_order() {
    let manifest = edit("task = \"classification\"", "task = \"x\"")
        .replace("goal = \"max\"", "goal = \"up\"")
        .replace("memory_mb = 2048", "memory_mb = 0");
    let config = r#"{"lr": 0.01, "lr2": 0.001, "batch_size": 48, "act0": "tanh", "layer1": 1}"#;
    let e = load_err(&manifest, config);
    let keys: Vec<&str> = e.issues().iter().map(|i| i.key.as_str()).collect();
    assert_eq!(
        keys,
        ["task", "metric.goal", "limits.memory_mb", "batch_size"],
        "{e}"
    );
    assert_eq!(e.to_string().lines().count(), 4);
}

#[test]
fn load_config_validates_against_the_space() {
    let d = subject(MANIFEST, CONFIG);
    let s = Subject::load(d.path()).unwrap();
    let other = d.path().join("other.json");
    fs::write(
        &other,
        r#"{"lr": 0.5, "lr2": 0.5, "batch_size": 64, "act0": "relu", "layer1": 2}"#,
    )
    .unwrap();
    let c = s.load_config(&other).unwrap();
    assert_eq!(c.get("batch_size"), Some(&json!(64)));
    assert!(s.validate_config(&c).is_empty());

    fs::write(
        &other,
        r#"{"lr": 0.5, "lr2": 0.5, "batch_size": 48, "act0": "relu", "layer1": 3}"#,
    )
    .unwrap();
    let e = s.load_config(&other).unwrap_err();
    assert_eq!(e.issues().len(), 2);
    assert!(
        e.issues()
            .iter()
            .all(|i| i.file == other && i.kind == IssueKind::OutOfDomain)
    );

    let e = s.load_config(Path::new("/nonexistent/c.json")).unwrap_err();
    assert_eq!(single(&e).kind, IssueKind::MissingFile);
    assert!(
        e.to_string()
            .starts_with("/nonexistent/c.json: found no readable file"),
        "{e}"
    );
}

#[test]
fn the_default_disk_limit_leaves_the_source_hash_as_before_it_existed() {
    let d = subject(MANIFEST, CONFIG);
    let s = Subject::load(d.path()).unwrap();
    let limits = serde_json::to_value(s.limits).unwrap();
    assert!(limits.get("disk_mb").is_none(), "{limits}");
    let h = s.source_hash().unwrap();
    let mut wider = s.clone();
    wider.limits.disk_mb = 100;
    assert_ne!(wider.source_hash().unwrap(), h);
}

#[test]
fn source_hash_is_stable_and_tracks_sources() {
    let d = subject(MANIFEST, CONFIG);
    let s = Subject::load(d.path()).unwrap();
    let h = s.source_hash().unwrap();
    assert_eq!(h.len(), 64);
    assert_eq!(s.source_hash().unwrap(), h);
    fs::create_dir(d.path().join("__pycache__")).unwrap();
    fs::write(d.path().join("__pycache__/train.pyc"), "x").unwrap();
    fs::write(d.path().join(".DS_Store"), "x").unwrap();
    assert_eq!(s.source_hash().unwrap(), h);
    fs::write(
        d.path().join("train.py"),
        "def train(config, seed):\n    return {1: 2}\n",
    )
    .unwrap();
    assert_ne!(s.source_hash().unwrap(), h);
}

#[test]
fn faults_of_one_program_share_the_source_hash() {
    let hash = |manifest: &str, config: &str, fault: &str| {
        let d = subject(manifest, config);
        fs::write(d.path().join("fault.json"), fault).unwrap();
        Subject::load(d.path()).unwrap().source_hash().unwrap()
    };
    let base = hash(MANIFEST, CONFIG, "{}");
    // Another fault of the same program: other name, description, config and fault record.
    let other = edit("name = \"digits-mlp\"", "name = \"digits-mlp-HLR\"")
        .replace("MLP on scikit-learn digits", "lr mutated");
    assert_eq!(hash(&other, FIXED, r#"{"id": "x"}"#), base);
    // How it runs does change a training.
    assert_ne!(
        hash(&edit("timeout_s = 300", "timeout_s = 5"), CONFIG, "{}"),
        base
    );
    assert_ne!(
        hash(
            &edit("name = \"accuracy\"", "name = \"loss\""),
            CONFIG,
            "{}"
        ),
        base
    );
}

#[test]
fn goal_compares_metrics() {
    assert!(Goal::Max.better(0.9, 0.8) && !Goal::Max.better(0.8, 0.9));
    assert!(Goal::Min.better(0.1, 0.2) && !Goal::Min.better(0.2, 0.1));
    assert!(!Goal::Max.better(0.5, 0.5) && Goal::Max.better_or_equal(0.5, 0.5));
    assert!(Goal::Min.better(1.0, f64::NAN) && !Goal::Min.better(f64::NAN, 1.0));
    assert_eq!(Goal::Min.best(0.3, 0.2), 0.2);
    assert_eq!(Goal::Max.sign(), 1.0);
    assert_eq!(Goal::Min.sign(), -1.0);
    assert_eq!(serde_json::to_string(&Goal::Max).unwrap(), "\"max\"");
    assert_eq!(
        serde_json::to_string(&Task::Classification).unwrap(),
        "\"classification\""
    );
}

/// The complete example of docs/manifest.md loads as documented.
#[test]
fn the_documented_example_is_valid() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/manifest.md");
    let Ok(doc) = fs::read_to_string(&doc_path) else {
        // Not part of a packaged crate; nothing to check then.
        return;
    };
    let block = |lang: &str, nth: usize| -> String {
        let fence = format!("```{lang}\n");
        let start = doc.match_indices(&fence).nth(nth).unwrap().0 + fence.len();
        let len = doc[start..].find("```").unwrap();
        doc[start..start + len].to_string()
    };
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(MANIFEST_FILE), block("toml", 0)).unwrap();
    fs::write(d.path().join("config.json"), block("json", 0)).unwrap();
    fs::write(d.path().join("fixed.json"), block("json", 1)).unwrap();
    fs::write(
        d.path().join("train.py"),
        "def train(config, seed):\n    return {}\n",
    )
    .unwrap();
    let s = Subject::load(d.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.name, "digits-mlp");
    assert_eq!(s.space.len(), 6);
    assert_eq!(s.fix.unwrap().faults.len(), 2);
    assert_eq!(
        s.limits,
        Limits {
            timeout_s: 300.0,
            memory_mb: 4096,
            output_mb: 16,
            disk_mb: 8192
        }
    );
}

#[test]
fn a_metric_s_range_comes_from_its_name_when_the_runs_agree() {
    let m = |name: &str| Metric {
        name: name.into(),
        goal: Goal::Max,
    };
    assert_eq!(m("accuracy").range(&[0.9, 1.0]), Some((0.0, 1.0)));
    assert_eq!(m("val_acc").range(&[0.5]), Some((0.0, 1.0)));
    assert_eq!(m("macro-F1").range(&[]), Some((0.0, 1.0)));
    assert_eq!(m("mae").range(&[0.3, 12.0]), Some((0.0, f64::INFINITY)));
    assert_eq!(
        m("test_loss").range(&[0.3, f64::NAN]),
        Some((0.0, f64::INFINITY))
    );
    // An accuracy in percent, a negative "error", a name that says nothing.
    assert_eq!(m("accuracy").range(&[93.0, 95.5]), None);
    assert_eq!(m("error").range(&[-0.5]), None);
    assert_eq!(m("r2").range(&[0.5]), None);
    assert_eq!(m("reward").range(&[0.5]), None);
}

/// `backend` selects Keras' backend: torch by default, only for Keras subjects, and part of the
/// source hash only when it is not the default (so older cache keys stay valid).
#[test]
fn keras_backend_is_optional_checked_and_hashed_only_when_not_torch() {
    let manifest = |framework: &str, backend: &str| {
        format!(
            r#"
name = "tiny"
task = "regression"
framework = "{framework}"
{backend}
config = "c.json"
dataset = {{ name = "line" }}
entry = {{ callable = "train.py:train" }}
metric = {{ name = "mae", goal = "min" }}
[space]
"#
        )
    };
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("c.json"), "{}").unwrap();
    fs::write(d.path().join("train.py"), "def train(c, s): pass\n").unwrap();
    let load = |text: String| {
        fs::write(d.path().join(MANIFEST_FILE), text).unwrap();
        Subject::load(d.path())
    };

    let default = load(manifest("keras", "")).unwrap();
    assert_eq!(default.backend, KerasBackend::Torch);
    let torch = load(manifest("keras", "backend = \"torch\"")).unwrap();
    assert_eq!(torch.backend, KerasBackend::Torch);
    assert_eq!(torch.source_hash().unwrap(), default.source_hash().unwrap());
    let tf = load(manifest("keras", "backend = \"tensorflow\"")).unwrap();
    assert_eq!(tf.backend, KerasBackend::Tensorflow);
    assert_ne!(tf.source_hash().unwrap(), default.source_hash().unwrap());

    let e = load(manifest("keras", "backend = \"tf\"")).unwrap_err();
    let i = single(&e);
    assert_eq!(
        (i.key.as_str(), i.kind),
        ("backend", IssueKind::InvalidValue)
    );
    assert!(
        e.to_string()
            .ends_with("key 'backend': found \"tf\", expected one of \"torch\", \"tensorflow\""),
        "{e}"
    );
    let e = load(manifest("pytorch", "backend = \"tensorflow\"")).unwrap_err();
    let i = single(&e);
    assert_eq!((i.key.as_str(), i.kind), ("backend", IssueKind::Conflict));
    assert!(
        e.to_string()
            .contains(":5:1: key 'backend': found backend = \"tensorflow\" with framework"),
        "{e}"
    );
}

#[test]
fn environment_packages_are_pins_or_wheels_inside_the_subject() {
    let manifest = format!(
        "{MANIFEST}\n[environment]\npackages = [\"Torch_Vision==0.25.0\", \"wheels/my_lib-0.1-py3-none-any.whl\"]\n"
    );
    let d = subject(&manifest, CONFIG);
    fs::create_dir(d.path().join("wheels")).unwrap();
    fs::write(d.path().join("wheels/my_lib-0.1-py3-none-any.whl"), "zip").unwrap();
    let s = Subject::load(d.path()).unwrap();
    assert_eq!(s.packages.len(), 2);
    assert_eq!(s.packages[0].pin(), "torch-vision==0.25.0");
    assert_eq!(s.packages[0].install_spec(), "torch-vision==0.25.0");
    assert_eq!(s.packages[1].pin(), "my-lib==0.1");
    assert!(
        s.packages[1]
            .install_spec()
            .ends_with("wheels/my_lib-0.1-py3-none-any.whl")
    );
    // In the source hash: the same subject without them hashes differently.
    let without = Subject {
        packages: Vec::new(),
        ..s.clone()
    };
    assert_ne!(s.source_hash().unwrap(), without.source_hash().unwrap());

    for (bad, hint) in [
        ("torchvision", None),
        ("torchvision>=0.2", None),
        ("../my_lib-0.1-py3-none-any.whl", Some("without `..`")),
        (
            "wheels/missing-0.1-py3-none-any.whl",
            Some("an existing file"),
        ),
        (
            "wheels/notawheel.whl",
            Some("NAME-VERSION-PY-ABI-PLATFORM.whl"),
        ),
    ] {
        let manifest = format!("{MANIFEST}\n[environment]\npackages = [\"{bad}\"]\n");
        let e = load_err(&manifest, CONFIG);
        let i = single(&e);
        assert_eq!(i.key, "environment.packages[0]", "{bad}: {e}");
        assert_eq!(i.kind, IssueKind::InvalidValue, "{bad}: {e}");
        match hint {
            Some(h) => assert!(
                i.hint.as_deref().is_some_and(|x| x.contains(h)),
                "{bad}: {e}"
            ),
            None => assert!(i.hint.is_none(), "{bad}: {e}"),
        }
    }
    let e = load_err(
        &format!("{MANIFEST}\n[environment]\npackages = \"x==1\"\n"),
        CONFIG,
    );
    assert_eq!(single(&e).kind, IssueKind::WrongType, "{e}");
    let e = load_err(
        &format!("{MANIFEST}\n[environment]\npython = \"3.12\"\n"),
        CONFIG,
    );
    assert_eq!(single(&e).kind, IssueKind::UnknownKey, "{e}");
}
