//! A script without `train(config, seed)` as a subject: a command-line script (argparse options)
//! or one that sets its hyperparameters as top-level constants (`LR = 0.01`). Which of its
//! options or constants are hyperparameters (the config) and which are settings left at the
//! script's values, and the entry file `reprolab_entry.py` that runs the script as
//! `train(config, seed)` through Python's `reprolab.script_entry`, so the user adds one line
//! (`reprolab.result(...)`) instead of restructuring the script.

use serde_json::Value;

use crate::scan::{CliOption, CommandLine, Constant, Key};

/// The file `init` writes for a command-line script; the manifest calls its `train`.
pub const ENTRY_FILE: &str = "reprolab_entry.py";

/// Option names that carry the seed: reprolab passes its own there.
const SEED_NAMES: [&str; 4] = ["seed", "random_seed", "rng_seed", "manual_seed"];

/// Words that mark a setting rather than a hyperparameter (where to read or write, which device,
/// how often to log): such options keep the script's default, and changing them cannot repair
/// a training. Matched against the words of the option's name (`log_interval`, `no_cuda`).
const SETTING_WORDS: [&str; 30] = [
    "log",
    "logging",
    "save",
    "cuda",
    "mps",
    "gpu",
    "gpus",
    "device",
    "workers",
    "worker",
    "dry",
    "dir",
    "path",
    "root",
    "output",
    "out",
    "resume",
    "checkpoint",
    "ckpt",
    "verbose",
    "print",
    "wandb",
    "tensorboard",
    "rank",
    "world",
    "port",
    "url",
    "host",
    "data",
    "dataset",
];

/// How the config reaches the script (in order of preference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Via {
    /// As command-line options.
    Options,
    /// In place of its top-level constants.
    Constants,
}

/// What the entry file needs to know of the script, and what `init` tells the user.
#[derive(Debug, Clone)]
pub struct ScriptEntry {
    pub via: Via,
    /// The options a config key sets (all but the seed's), in the script's order; none for
    /// constants.
    pub options: Vec<CliOption>,
    /// The option (or constant) reprolab passes the seed in, when the script has one.
    pub seed_option: Option<String>,
    /// Options (or constants) left at the script's values: settings, and options without a
    /// literal default.
    pub defaulted: Vec<String>,
    /// Positional arguments: their values go into `ARGS` of the entry file, by hand.
    pub positional: Vec<String>,
    /// Options reprolab cannot set (`count`, `append`, several values).
    pub skipped: Vec<String>,
    /// The script already calls `reprolab.result(...)`.
    pub calls_result: bool,
}

fn is_seed(dest: &str) -> bool {
    SEED_NAMES.contains(&dest.to_ascii_lowercase().as_str())
}

/// Whether an option is a setting (its name holds one of [`SETTING_WORDS`]), not a
/// hyperparameter.
pub fn is_setting(dest: &str) -> bool {
    dest.to_ascii_lowercase()
        .split(['_', '-'])
        .any(|w| SETTING_WORDS.contains(&w))
}

/// The script's entry and the config keys it gets: every option that is neither the seed nor a
/// setting and has a literal default, with that default and the script's `choices`.
pub fn plan(line: &CommandLine, calls_result: bool) -> (ScriptEntry, Vec<Key>) {
    let mut keys = Vec::new();
    let mut defaulted = Vec::new();
    let mut seed_option = None;
    for o in &line.options {
        if is_seed(&o.dest) && o.action.is_none() {
            seed_option.get_or_insert_with(|| o.flag.clone());
        } else if is_setting(&o.dest) || o.value.is_none() {
            defaulted.push(o.dest.clone());
        } else {
            keys.push(Key {
                key: o.dest.clone(),
                value: o.value.clone(),
                choices: o.choices.clone(),
            });
        }
    }
    let entry = ScriptEntry {
        via: Via::Options,
        options: line
            .options
            .iter()
            .filter(|o| Some(&o.flag) != seed_option.as_ref())
            .cloned()
            .collect(),
        seed_option,
        defaulted,
        positional: line.positional.clone(),
        skipped: line.skipped.clone(),
        calls_result,
    };
    (entry, keys)
}

/// The entry and the config keys of a script of constants: every constant that is neither the
/// seed nor a setting.
pub fn plan_constants(constants: &[Constant], calls_result: bool) -> (ScriptEntry, Vec<Key>) {
    let mut keys = Vec::new();
    let mut defaulted = Vec::new();
    let mut seed = None;
    for c in constants {
        if is_seed(&c.name) && c.value.is_i64() {
            seed.get_or_insert_with(|| c.name.clone());
        } else if is_setting(&c.name) {
            defaulted.push(c.name.clone());
        } else {
            keys.push(Key {
                key: c.name.clone(),
                value: Some(c.value.clone()),
                choices: None,
            });
        }
    }
    let entry = ScriptEntry {
        via: Via::Constants,
        options: Vec::new(),
        seed_option: seed,
        defaulted,
        positional: Vec::new(),
        skipped: Vec::new(),
        calls_result,
    };
    (entry, keys)
}

/// A Python string literal (JSON's escapes are valid Python).
fn py_str(s: &str) -> String {
    Value::from(s).to_string()
}

/// The text of `reprolab_entry.py` for `script`.
pub fn entry_file(script: &str, e: &ScriptEntry) -> String {
    if e.via == Via::Constants {
        return constants_entry_file(script, e);
    }
    let width = e
        .options
        .iter()
        .map(|o| py_str(&o.dest).len() + option_value(o).len())
        .max()
        .unwrap_or(0);
    let options: Vec<String> = e
        .options
        .iter()
        .map(|o| {
            let pair = format!("{}: {},", py_str(&o.dest), option_value(o));
            let pad = width + 3 - pair.len().min(width + 3);
            match o.help.as_deref().map(one_line) {
                Some(help) if !help.is_empty() => {
                    format!("    {pair}{:pad$}  # {help}", "")
                }
                _ => format!("    {pair}"),
            }
        })
        .collect();
    let positional = if e.positional.is_empty() {
        String::new()
    } else {
        format!(
            "\n# The script's positional arguments come first on its command line: put their \
             values here\n# ({}).",
            e.positional.join(", ")
        )
    };
    let seed = seed_literal(e);
    format!(
        r#""""reprolab's entry for {script}, written by `reprolab init`.

reprolab calls train(config, seed); it runs {script} as `python {script} ARGS --option value ...`
would, inside reprolab's worker, each key of config.json passed as the option OPTIONS names, and
returns what {script} passes to reprolab.result(search=..., holdout=...) (call it once, after
training, with the metric on the validation and the test split). Edit OPTIONS when a key should
reach the script under another option; keys not in config.json keep the script's defaults.
"""
from reprolab.script_entry import run_script_as_train

SCRIPT = {script_lit}
# config key -> the option that sets it; a switch as (option, "store_true" | "store_false")
OPTIONS = {{
{options}
}}{positional}
ARGS = []
SEED_OPTION = {seed}


def train(config, seed):
    return run_script_as_train(__file__, SCRIPT, OPTIONS, config, seed, ARGS, SEED_OPTION)
"#,
        script_lit = py_str(script),
        options = options.join("\n"),
    )
}

fn constants_entry_file(script: &str, e: &ScriptEntry) -> String {
    let seed = seed_literal(e);
    let runs = if script.ends_with(".ipynb") {
        format!("the code cells of {script} in order (IPython magics and `!` lines skipped)")
    } else {
        format!("{script} as `python {script}` would")
    };
    format!(
        r#""""reprolab's entry for {script}, written by `reprolab init`.

reprolab calls train(config, seed); it runs {runs}, inside reprolab's
worker, with each key of config.json in place of the top-level constant of that name (`LR = 0.01`
runs as `LR = config["LR"]`; nothing else changes) and the seed in place of SEED_CONSTANT's, and
returns what {script} passes to reprolab.result(search=..., holdout=...) (call it once, after
training, with the metric on the validation and the test split). Constants not in config.json
keep the script's values.
"""
from reprolab.script_entry import run_script_with_constants

SCRIPT = {script_lit}
SEED_CONSTANT = {seed}


def train(config, seed):
    return run_script_with_constants(__file__, SCRIPT, config, seed, SEED_CONSTANT)
"#,
        script_lit = py_str(script),
    )
}

/// The seed's option or constant as Python writes it, `None` when the script has none.
fn seed_literal(e: &ScriptEntry) -> String {
    e.seed_option
        .as_deref()
        .map_or_else(|| "None".to_string(), py_str)
}

/// How OPTIONS writes an option: `"--lr"`, or `("--amp", "store_true")` for a switch.
fn option_value(o: &CliOption) -> String {
    match &o.action {
        Some(action) => format!("({}, {})", py_str(&o.flag), py_str(action)),
        None => py_str(&o.flag),
    }
}

fn one_line(help: &str) -> String {
    let text = help.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > 70 {
        format!("{}...", text.chars().take(67).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn option(dest: &str, flag: &str, action: Option<&str>, value: Option<Value>) -> CliOption {
        CliOption {
            dest: dest.into(),
            flag: flag.into(),
            action: action.map(Into::into),
            value,
            choices: None,
            help: None,
        }
    }

    fn switch(dest: &str, flag: &str) -> CliOption {
        option(dest, flag, Some("store_true"), Some(json!(false)))
    }

    /// The command line of PyTorch's MNIST example, less its help texts.
    fn mnist() -> CommandLine {
        CommandLine {
            options: vec![
                option("batch_size", "--batch-size", None, Some(json!(64))),
                option("epochs", "--epochs", None, Some(json!(14))),
                option("lr", "--lr", None, Some(json!(1.0))),
                option("gamma", "--gamma", None, Some(json!(0.7))),
                switch("no_cuda", "--no-cuda"),
                switch("dry_run", "--dry-run"),
                option("seed", "--seed", None, Some(json!(1))),
                option("log_interval", "--log-interval", None, Some(json!(10))),
                switch("save_model", "--save-model"),
                option("weights", "--weights", None, None),
            ],
            positional: vec!["data".into()],
            skipped: vec!["v".into()],
        }
    }

    #[test]
    fn hyperparameters_become_keys_settings_keep_their_defaults() {
        let (e, keys) = plan(&mnist(), false);
        let names: Vec<&str> = keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(names, ["batch_size", "epochs", "lr", "gamma"]);
        assert_eq!(e.seed_option.as_deref(), Some("--seed"));
        assert_eq!(
            e.defaulted,
            [
                "no_cuda",
                "dry_run",
                "log_interval",
                "save_model",
                "weights"
            ]
        );
        assert_eq!(e.options.len(), 9, "every option but the seed's");
        assert!(is_setting("num_workers") && is_setting("data_dir") && !is_setting("dropout"));
    }

    #[test]
    fn the_entry_file_names_every_option_and_the_seed() {
        let (e, _) = plan(&mnist(), false);
        let text = entry_file("main.py", &e);
        assert!(text.contains("SCRIPT = \"main.py\""), "{text}");
        assert!(
            text.contains("    \"batch_size\": \"--batch-size\","),
            "{text}"
        );
        assert!(
            text.contains("    \"no_cuda\": (\"--no-cuda\", \"store_true\"),"),
            "{text}"
        );
        assert!(text.contains("SEED_OPTION = \"--seed\""), "{text}");
        assert!(text.contains("positional arguments") && text.contains("(data)"));
        let none = ScriptEntry {
            seed_option: None,
            positional: Vec::new(),
            ..e
        };
        let text = entry_file("train.py", &none);
        assert!(text.contains("SEED_OPTION = None") && !text.contains("positional"));
    }

    #[test]
    fn constants_of_a_plain_script_become_keys() {
        let constant = |name: &str, value: Value| Constant {
            name: name.into(),
            value,
        };
        let (e, keys) = plan_constants(
            &[
                constant("SEED", json!(3)),
                constant("LEARNING_RATE", json!(0.01)),
                constant("DATA_DIR", json!("./data")),
                constant("NUM_EPOCHS", json!(5)),
            ],
            true,
        );
        let names: Vec<&str> = keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(names, ["LEARNING_RATE", "NUM_EPOCHS"]);
        assert_eq!(e.defaulted, ["DATA_DIR"]);
        let text = entry_file("train.py", &e);
        assert!(text.contains("SEED_CONSTANT = \"SEED\""), "{text}");
        assert!(
            text.contains("run_script_with_constants(__file__"),
            "{text}"
        );
    }
}
