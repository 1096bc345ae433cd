//! `init`'s check: one training of the new subject, and when it fails, what to change.

use reprolab_core::Outcome;
use reprolab_core::manifest::Subject;

use crate::script_entry::ENTRY_FILE;

/// What to change so that the failed `outcome` passes, in the words of the contract; `None` for
/// a training that passed.
pub fn advice(subject: &Subject, outcome: &Outcome) -> Option<String> {
    let entry = subject.entry.spec();
    let function = entry.rsplit(':').next().unwrap_or("train").to_string();
    // A command-line script run through the entry file init wrote: its own failures.
    let script = entry.starts_with(&format!("{ENTRY_FILE}:"));
    Some(match outcome {
        Outcome::Ok { .. } => return None,
        Outcome::Nan { .. } => format!(
            "{function} returned a NaN or infinite metric: the training diverged or the metric \
             divides by zero; check the loss and the learning rate in config.json"
        ),
        Outcome::Exception { kind, message, .. } => match kind.as_str() {
            "ScriptResultMissing" => format!(
                "the script must report its metric: `import reprolab`, then once after training \
                 `reprolab.result(search=VALIDATION_METRIC, holdout=TEST_METRIC)` ({message})"
            ),
            "ScriptExit" => format!(
                "{message}. Correct OPTIONS in {ENTRY_FILE} (or the value in config.json), and \
                 give the script's positional arguments in ARGS there"
            ),
            "ReprolabContractError" if script => format!(
                "{message} (the entry is {ENTRY_FILE}; the script's metric comes from \
                 reprolab.result(search=..., holdout=...))"
            ),
            // reprolab's own check of the returned value; its message, shown above, names what
            // is wrong.
            "ReprolabContractError" => format!(
                "{function} must return the metric on two held-out splits as a dict with \
                 numbers under \"search\" and \"holdout\", e.g. \
                 return {{\"search\": acc_val, \"holdout\": acc_test}}"
            ),
            "ModuleNotFoundError" => format!(
                "the program imports a package reprolab's managed environment lacks ({message}; \
                 it holds torch, numpy, scikit-learn, scipy, keras and pytest): name it in \
                 reprolab.toml, [environment] packages = [\"NAME==VERSION\"], and the next \
                 training installs it; or run reprolab with --python PATH, the interpreter of an \
                 environment that has it and torch, numpy and scikit-learn"
            ),
            "KeyError" => format!(
                "{function} reads config[{message}], which config.json does not have: add the \
                 key with its value to config.json and to [space] in reprolab.toml (or read it \
                 with config.get(KEY, DEFAULT))"
            ),
            "TypeError" if message.contains("argument") => format!(
                "{function} cannot be called as {function}(config, seed) ({message}): give it \
                 exactly these two parameters, config (a dict) and seed (an int)"
            ),
            _ => format!("{function} raised {kind}: fix the traceback above"),
        },
        Outcome::Timeout { limit_s } => format!(
            "one training took longer than {limit_s} s: raise timeout_s in [limits] of \
             reprolab.toml, or train less (fewer epochs in config.json)"
        ),
        Outcome::Oom { limit_mb, .. } => format!(
            "one training used more than {limit_mb} MiB: raise memory_mb in [limits] of \
             reprolab.toml, or use smaller batches"
        ),
        Outcome::OutputLimit { limit_mb } => format!(
            "the training printed more than {limit_mb} MiB: print less, or raise output_mb in \
             [limits] of reprolab.toml"
        ),
        Outcome::DiskLimit { limit_mb } => format!(
            "the training wrote more than {limit_mb} MiB into its work directory (checkpoints, \
             logs, TMPDIR): write less, or raise disk_mb in [limits] of reprolab.toml"
        ),
        Outcome::Crash { .. } => format!(
            "the training died without a result ({}); see its last output above",
            outcome.summary()
        ),
        Outcome::Infra { message } => format!("reprolab could not run the training: {message}"),
        // init's check trains without a pruner: only a search's trials are pruned.
        Outcome::Pruned { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subject whose entry is `train.py:train`, as `init` writes it.
    fn subject() -> Subject {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("train.py"),
            "def train(config, seed): pass\n",
        )
        .unwrap();
        let entry = crate::Entry {
            file: "train.py".into(),
            function: "train".into(),
            keys: Vec::new(),
            dynamic: 0,
            framework: "pytorch".into(),
            script: None,
            missing: Vec::new(),
        };
        crate::write(dir.path(), &crate::scaffold("s", &entry), false).unwrap();
        Subject::load(dir.path()).unwrap()
    }

    fn exception(kind: &str, message: &str) -> Outcome {
        Outcome::Exception {
            kind: kind.into(),
            message: message.into(),
            traceback: String::new(),
        }
    }

    #[test]
    fn each_failure_says_what_to_change() {
        let s = subject();
        let missing = advice(&s, &exception("KeyError", "'lr'")).unwrap();
        assert!(
            missing.contains("config['lr']") && missing.contains("config.json"),
            "{missing}"
        );
        let signature = advice(
            &s,
            &exception(
                "TypeError",
                "train() takes 1 positional argument but 2 were given",
            ),
        )
        .unwrap();
        assert!(signature.contains("train(config, seed)"), "{signature}");
        let holdout = advice(
            &s,
            &exception(
                "ReprolabContractError",
                "the returned dict has no 'holdout' key",
            ),
        )
        .unwrap();
        assert!(holdout.contains("\"holdout\""), "{holdout}");
        let missing_package = advice(
            &s,
            &exception("ModuleNotFoundError", "No module named 'torchvision'"),
        )
        .unwrap();
        assert!(
            missing_package.contains("'torchvision'")
                && missing_package.contains("[environment] packages")
                && missing_package.contains("--python PATH"),
            "{missing_package}"
        );
        let silent = advice(
            &s,
            &exception("ScriptResultMissing", "main.py finished without calling"),
        )
        .unwrap();
        assert!(silent.contains("reprolab.result(search="), "{silent}");
        let rejected = advice(
            &s,
            &exception(
                "ScriptExit",
                "main.py exited with status 2 when run with: --x 1",
            ),
        )
        .unwrap();
        assert!(
            rejected.starts_with("main.py exited with status 2") && rejected.contains("OPTIONS"),
            "{rejected}"
        );
        assert!(
            advice(&s, &Outcome::Timeout { limit_s: 1.0 })
                .unwrap()
                .contains("timeout_s")
        );
        assert!(
            advice(
                &s,
                &Outcome::Ok {
                    search: 1.0,
                    holdout: 1.0
                }
            )
            .is_none()
        );
    }
}
