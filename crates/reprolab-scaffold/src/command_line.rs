//! A command-line script (argparse) as a subject: which of its options are hyperparameters (the
//! config), which are settings left at the script's defaults, and the entry file
//! `reprolab_entry.py` that runs the script as `train(config, seed)` through
//! `reprolab.script_entry`, so the user adds one line (`reprolab.result(...)`) instead of
//! restructuring the script.

use serde_json::Value;

use crate::scan::{CliOption, CommandLine, Key};

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

/// What the entry file needs to know of the script, and what `init` tells the user.
#[derive(Debug, Clone)]
pub struct ScriptEntry {
    /// The options a config key sets (all but the seed's), in the script's order.
    pub options: Vec<CliOption>,
    /// The option reprolab passes the seed in, when the script has one.
    pub seed_option: Option<String>,
    /// Options left at the script's defaults: settings, and options without a literal default.
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

/// A Python string literal (JSON's escapes are valid Python).
fn py_str(s: &str) -> String {
    Value::from(s).to_string()
}

/// The text of `reprolab_entry.py` for `script`.
pub fn entry_file(script: &str, e: &ScriptEntry) -> String {
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
    let seed = e
        .seed_option
        .as_deref()
        .map_or_else(|| "None".to_string(), py_str);
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
            line: 1,
            value,
            choices: None,
            help: None,
        }
    }

    /// The command line of PyTorch's MNIST example, less its help texts.
    fn mnist() -> CommandLine {
        CommandLine {
            line: 1,
            options: vec![
                option("batch_size", "--batch-size", None, Some(json!(64))),
                option("epochs", "--epochs", None, Some(json!(14))),
                option("lr", "--lr", None, Some(json!(1.0))),
                option("gamma", "--gamma", None, Some(json!(0.7))),
                option(
                    "no_cuda",
                    "--no-cuda",
                    Some("store_true"),
                    Some(json!(false)),
                ),
                option(
                    "dry_run",
                    "--dry-run",
                    Some("store_true"),
                    Some(json!(false)),
                ),
                option("seed", "--seed", None, Some(json!(1))),
                option("log_interval", "--log-interval", None, Some(json!(10))),
                option(
                    "save_model",
                    "--save-model",
                    Some("store_true"),
                    Some(json!(false)),
                ),
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
}
