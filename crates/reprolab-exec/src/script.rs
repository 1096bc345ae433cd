//! The cold path: a subject that is a plain script, run through its command template in a fresh
//! process each time (torch is imported on every run), under the same watchdog as the workers.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::Mode;
use crate::env::PythonEnv;
use crate::proctree::Tree;
use crate::result::{Exit, Finished, interpret};
use crate::sandbox;
use crate::supervise::{Violation, supervise};
use crate::worker::infra;
use reprolab_core::manifest::{Limits, TemplateError, expand_command};

/// Quote a value for `sh -c`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Fill the template's placeholders with shell-quoted values (braces as the manifest defines).
pub fn render(
    template: &str,
    python: &Path,
    config: &Path,
    seed: u64,
    result: &Path,
    workdir: &Path,
) -> Result<String, TemplateError> {
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    let (python, config, seed, result, workdir) = (
        q(python),
        q(config),
        seed.to_string(),
        q(result),
        q(workdir),
    );
    expand_command(
        template,
        &[
            ("python", &python),
            ("config", &config),
            ("seed", &seed),
            ("result", &result),
            ("workdir", &workdir),
        ],
    )
}

/// Run the command template once in `workdir` (which must exist and be empty).
#[allow(clippy::too_many_arguments)]
pub async fn run_command(
    env: &PythonEnv,
    subject_dir: &Path,
    template: &str,
    config: &Value,
    seed: u64,
    mode: Mode,
    limits: &Limits,
    prune: Option<&reprolab_core::PruneSpec>,
    workdir: &Path,
) -> Finished {
    let config_path = workdir.join("config.json");
    if let Err(e) = std::fs::write(&config_path, config.to_string()) {
        return infra(format!("cannot write {}: {e}", config_path.display()));
    }
    let line = match render(
        template,
        &env.python,
        &config_path,
        seed,
        &workdir.join("result.json"),
        workdir,
    ) {
        Ok(line) => line,
        Err(e) => return infra(format!("command template `{template}`: {e}")),
    };
    let mode_env = serde_json::to_value(mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "eval".into());
    let prune_env = prune
        .and_then(|p| serde_json::to_string(p).ok())
        .unwrap_or_default();
    let run = match run_confined(
        env,
        &["sh".into(), "-c".into(), line.clone().into()],
        subject_dir,
        workdir,
        limits,
        &[
            ("REPROLAB_MODE", mode_env.as_str()),
            // `reprolab.run_script` reads it (as the worker reads a request's `prune`).
            ("REPROLAB_PRUNE", prune_env.as_str()),
        ],
    )
    .await
    {
        Ok(run) => run,
        Err(e) => return infra(e),
    };
    let (outcome, epochs, output_tail) =
        interpret(workdir, run.exit, run.violation, run.peak_mb, limits);
    Finished {
        outcome,
        epochs,
        output_tail,
        duration_s: run.duration_s,
    }
}

/// How a confined program ended.
#[derive(Debug)]
pub struct Confined {
    pub exit: Exit,
    /// The limit it broke, if any (it was then killed).
    pub violation: Option<Violation>,
    pub peak_mb: u64,
    pub duration_s: f64,
    /// Its stdout and stderr together: `workdir/output.log`.
    pub output: PathBuf,
}

/// Run `argv` (resolved against the managed interpreter's directory first on PATH) in `cwd`
/// under the sandbox: confined to write only `workdir` (which must exist), scrubbed
/// environment plus `envs`, `TMPDIR=workdir`, no stdin, output to `workdir/output.log`, under
/// the watchdog of `limits`. Whatever it leaves running is killed. `Err` only when it could not
/// be started.
pub async fn run_confined(
    env: &PythonEnv,
    argv: &[OsString],
    cwd: &Path,
    workdir: &Path,
    limits: &Limits,
    envs: &[(&str, &str)],
) -> Result<Confined, String> {
    let output = workdir.join("output.log");
    let (out, err) = std::fs::File::create(&output)
        .and_then(|f| Ok((f.try_clone()?, f)))
        .map_err(|e| format!("cannot create {}: {e}", output.display()))?;
    sandbox::warn_gaps_once();
    let argv = sandbox::confine(&env.python, &[workdir], argv);
    let (program, args) = sandbox::wrap(&argv);
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args);
    sandbox::apply_env(&mut cmd, env.pythonpath.as_deref());
    sandbox::contain(&mut cmd);
    // The managed interpreter first on PATH, so that a command saying `python` gets it too.
    if let Some(bin) = env.python.parent() {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", bin.display()));
    }
    cmd.env("REPROLAB_WORKDIR", workdir)
        .env("TMPDIR", workdir)
        .envs(envs.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", argv))?;
    let tree = Tree::whole(child.id().unwrap_or(0) as i32);
    let mut on_cancel = KillOnDrop(Some(tree));
    let sup = supervise(tree, limits, &output, child.wait(), Duration::from_secs(10)).await;
    let exit = match sup.done {
        Some(Ok(status)) => Exit {
            code: status.code(),
            signal: status.signal(),
        },
        _ => Exit::default(),
    };
    on_cancel.0 = None;
    let _ = tokio::task::spawn_blocking(move || tree.kill()).await;
    Ok(Confined {
        exit,
        violation: sup.violation,
        peak_mb: sup.peak_mb,
        duration_s: sup.elapsed.as_secs_f64(),
        output,
    })
}

/// Kills a run's process tree when its future is dropped (the caller cancelled it), so that
/// nothing it started runs on; disarmed (`None`) once the run has ended. `kill_on_drop` ends
/// the root, and with it a PID namespace; this ends the rest where there is none.
struct KillOnDrop(Option<Tree>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(tree) = self.0.take() {
            tree.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_quoted() {
        let s = render(
            "{python} t.py --config {config} --seed {seed} --out {result}",
            Path::new("/e/bin/python"),
            Path::new("/w/it's.json"),
            7,
            Path::new("/w/r.json"),
            Path::new("/w"),
        )
        .unwrap();
        assert_eq!(
            s,
            r"'/e/bin/python' t.py --config '/w/it'\''s.json' --seed 7 --out '/w/r.json'"
        );
    }
}
