//! A report made ready to judge scripts against: what it states, the environment for its
//! versions, the seeds and the directories a script may import from. Every verb (`reproduce`,
//! `reproduce verify`, both kinds of `bench reproduce`) starts here, so that a script is judged
//! in the same environment whichever way it came about.
//!
//! The versions come from three places, strongest first: the user's `--package` pins, the
//! `packages` of a bundled bug's `bug.json`, the versions the report states; frameworks it uses
//! without a version are taken as they were on its date (`--as-of`, its own date, its commit's).

use std::path::{Path, PathBuf};

use reprolab_core::manifest::Limits;
use reprolab_exec::PythonEnv;
use reprolab_exec::env::{EnvError, EnvOptions, Progress};
use reprolab_exec::spec_env::{AsOf, Pin, Resolution, ensure_spec};
use reprolab_store::Store;

use crate::agent::Case;
use crate::context::{self, ContextError, ContextOptions, Snippet};
use crate::facts::{self, Facts};
use crate::report::BugReport;
use crate::run::{ScriptRunner, WarmPools, default_limits};
use crate::{dating, opinion, outputs};

/// How reports are prepared and scripts run: the user's settings, as the command line gives
/// them (checked by [`Options::check`]).
#[derive(Debug, Clone)]
pub struct Options {
    /// `NAME==VERSION` pins that override the report's versions.
    pub packages: Vec<String>,
    /// The project's source, importable by the scripts.
    pub repo: Option<PathBuf>,
    /// The day unversioned frameworks are taken from (`YYYY-MM-DD`), instead of the report's.
    pub as_of: Option<String>,
    /// Runs per script, seeds 1..=runs.
    pub runs: usize,
    /// Time limit of one run, in seconds.
    pub timeout_s: f64,
    /// Memory limit of one run's processes.
    pub memory_mb: u64,
}

/// What is wrong with the settings, a report's `bug.json`, or the environment.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("--runs is {0}; expected 1 to 100")]
    Runs(usize),
    #[error("--timeout is {0}; expected seconds > 0")]
    Timeout(f64),
    #[error("--repo {}: not a directory", .0.display())]
    Repo(PathBuf),
    #[error("--as-of {0}")]
    AsOf(String),
    #[error("--package {0}")]
    Package(String),
    /// The `packages` field of a bundled bug's `bug.json` (or a JSON report).
    #[error("{}: field `packages`: {detail}", path.display())]
    MetaPackages { path: PathBuf, detail: String },
    #[error("preparing the Python environment for the report's versions")]
    Environment(#[source] EnvError),
}

impl PrepareError {
    /// A flag's value is wrong (as opposed to a file or the machine).
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            PrepareError::MetaPackages { .. } | PrepareError::Environment(_)
        )
    }
}

impl Options {
    /// Refuses settings no run could honour, before anything is loaded or installed.
    pub fn check(&self) -> Result<(), PrepareError> {
        if self.runs == 0 || self.runs > 100 {
            return Err(PrepareError::Runs(self.runs));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(PrepareError::Timeout(self.timeout_s));
        }
        if let Some(repo) = &self.repo
            && !repo.is_dir()
        {
            return Err(PrepareError::Repo(repo.clone()));
        }
        if let Some(day) = &self.as_of {
            AsOf::check_date(day).map_err(PrepareError::AsOf)?;
        }
        Ok(())
    }

    /// The limits of one run: the user's time and memory, the default output cap.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout_s: self.timeout_s,
            memory_mb: self.memory_mb,
            ..default_limits()
        }
    }
}

/// A report ready to judge scripts against.
pub struct Prepared {
    pub report: BugReport,
    pub facts: Facts,
    pub env: PythonEnv,
    pub resolution: Resolution,
    pub seeds: Vec<u64>,
    /// Absolute directories a script may import from (`--repo`, the report's own code).
    pub paths: Vec<PathBuf>,
}

/// What the environment must hold for a report, decided without Python.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvRequest {
    pub pins: Vec<Pin>,
    pub as_of: Option<AsOf>,
}

/// The pins for `report`: `--package` first, then its `bug.json`'s packages, then the versions
/// it states, one pin per package.
pub fn request(report: &BugReport, facts: &Facts, o: &Options) -> Result<EnvRequest, PrepareError> {
    let user = o
        .packages
        .iter()
        .map(|p| Pin::parse(p).map_err(PrepareError::Package))
        .collect::<Result<Vec<_>, _>>()?;
    let user = with_missing(user, meta_packages(report)?);
    Ok(EnvRequest {
        pins: pins_for(facts, &user),
        as_of: as_of(report, o.as_of.as_deref(), &import_dirs(report, o)),
    })
}

/// `pins`, then those of `more` for packages `pins` does not name.
fn with_missing(mut pins: Vec<Pin>, more: Vec<Pin>) -> Vec<Pin> {
    for pin in more {
        if !pins.iter().any(|p| p.name == pin.name) {
            pins.push(pin);
        }
    }
    pins
}

/// The versions to run with: the user's pins, and the report's stated versions for packages the
/// user did not pin.
pub fn pins_for(facts: &Facts, user: &[Pin]) -> Vec<Pin> {
    let stated = facts
        .versions
        .iter()
        .map(|v| Pin::stated(&v.package, &v.version))
        .collect();
    with_missing(user.to_vec(), stated)
}

/// `packages` of a bundled bug's `bug.json` (a JSON report's own `packages` field too): the
/// environment the bug was written for.
pub fn meta_packages(report: &BugReport) -> Result<Vec<Pin>, PrepareError> {
    let Some(list) = report.meta.as_ref().and_then(|m| m.get("packages")) else {
        return Ok(Vec::new());
    };
    let wrong = |detail: String| PrepareError::MetaPackages {
        path: report.path.with_file_name("bug.json"),
        detail,
    };
    let items = list
        .as_array()
        .ok_or_else(|| wrong("expected a list of \"NAME==VERSION\" strings".into()))?;
    items
        .iter()
        .map(|v| Pin::parse(v.as_str().unwrap_or_default()).map_err(wrong))
        .collect()
}

/// The day the report's unversioned frameworks are taken from: `as_of` (the user's), else the
/// report's date, else its commit's in one of `repos`.
pub fn as_of(report: &BugReport, as_of: Option<&str>, repos: &[PathBuf]) -> Option<AsOf> {
    let dated = match as_of {
        Some(day) => Some(dating::Dated {
            date: day.to_string(),
            source: "--as-of".into(),
        }),
        None => dating::stated_date(report)
            .filter(|d| AsOf::check_date(&d.date).is_ok())
            .or_else(|| dating::commit(report).and_then(|h| dating::commit_date(&h, repos))),
    }?;
    Some(AsOf {
        date: dated.date,
        packages: dating::frameworks(report),
        source: dated.source,
    })
}

/// `--repo` and the report's own code, as given.
fn import_dirs(report: &BugReport, o: &Options) -> Vec<PathBuf> {
    o.repo.iter().chain(&report.code_dir).cloned().collect()
}

/// Extract the report's facts and build (or reuse) the environment for its versions. Blocking:
/// installing packages may take minutes; `progress` sees the installer's lines.
pub fn prepare(
    report: BugReport,
    o: &Options,
    env: &EnvOptions,
    progress: Progress,
) -> Result<Prepared, PrepareError> {
    let facts = facts::extract(&report.text);
    let wanted = request(&report, &facts, o)?;
    let (env, resolution) = ensure_spec(env, &wanted.pins, wanted.as_of.as_ref(), progress)
        .map_err(PrepareError::Environment)?;
    let paths = import_dirs(&report, o)
        .into_iter()
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .collect();
    Ok(Prepared {
        report,
        facts,
        env,
        resolution,
        seeds: (1..=o.runs as u64).collect(),
        paths,
    })
}

impl Prepared {
    /// What the user should know about the environment: versions that could not be used and
    /// versions taken as of a date.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .resolution
            .substitutions
            .iter()
            .map(|s| {
                format!(
                    "{} cannot be used ({}); running with {}",
                    s.requested,
                    s.why,
                    s.used.as_deref().unwrap_or("none installed")
                )
            })
            .collect();
        if let Some(a) = &self.resolution.as_of {
            notes.push(format!(
                "no version stated for {}; using the releases current on {} (from {})",
                a.packages.join(", "),
                a.date,
                a.source
            ));
        }
        notes
    }

    /// Lets scripts import modules from `dir` too (a script's own directory).
    pub fn add_import_dir(&mut self, dir: &Path) {
        self.paths
            .push(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }

    /// A runner in the report's environment: on `warm` workers when given (as many runs at once
    /// as they allow), else `workers` fresh processes at once.
    pub fn runner<'a>(
        &'a self,
        limits: Limits,
        workers: usize,
        store: Option<&'a Store>,
        warm: Option<&'a WarmPools>,
    ) -> ScriptRunner<'a> {
        ScriptRunner {
            env: &self.env,
            limits,
            paths: self.paths.clone(),
            parallel: warm.map_or(workers, |w| w.parallelism(&self.env)),
            store,
            warm,
        }
    }

    /// What the model loop works on.
    pub fn case<'a>(&'a self, context: &'a [Snippet]) -> Case<'a> {
        Case {
            report: &self.report,
            facts: &self.facts,
            env: &self.resolution,
            seeds: &self.seeds,
            context,
        }
    }

    /// The code context for the prompt: the `k` definitions of the import directories, else of
    /// the pinned packages that are not frameworks, that rank highest against the report.
    /// Indexing runs Python, off the async runtime.
    pub async fn code_context(&self, k: usize) -> Result<Vec<Snippet>, ContextError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let python = self.env.python.clone();
        let pythonpath = self.env.pythonpath.clone();
        let roots = self.paths.clone();
        let packages = context::context_packages(self.resolution.installed.keys());
        let index = tokio::task::spawn_blocking(move || {
            let pp = pythonpath.as_deref();
            let roots = if roots.is_empty() {
                context::package_dirs(&python, pp, &packages)?
            } else {
                roots
            };
            context::index(&python, pp, &roots)
        })
        .await
        .map_err(|e| ContextError::Output {
            detail: e.to_string(),
        })??;
        let opts = ContextOptions {
            k,
            ..ContextOptions::default()
        };
        Ok(context::select(
            &index,
            &self.report.text,
            &self.facts,
            &opts,
        ))
    }

    /// `verdict.json` of a script judged against this report.
    pub fn verdict_file<'a>(
        &'a self,
        verdict: &'a crate::Verdict,
        origin: serde_json::Value,
        llm_opinion: Option<opinion::Opinion>,
    ) -> outputs::VerdictFile<'a> {
        outputs::VerdictFile {
            report: self.report.path.display().to_string(),
            reproduced: verdict.reproduced,
            verdict,
            environment: &self.resolution,
            facts: &self.facts,
            origin,
            llm_opinion,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::extract;

    fn options() -> Options {
        Options {
            packages: Vec::new(),
            repo: None,
            as_of: None,
            runs: 5,
            timeout_s: 120.0,
            memory_mb: 4096,
        }
    }

    fn bundled(text: &str, meta: serde_json::Value) -> BugReport {
        BugReport {
            id: "01-x".into(),
            text: text.into(),
            path: PathBuf::from("bugs/01-x/report.md"),
            code_dir: None,
            meta: Some(meta),
        }
    }

    fn requirements(pins: &[Pin]) -> Vec<String> {
        pins.iter().map(Pin::requirement).collect()
    }

    #[test]
    fn user_pins_win_over_stated_versions() {
        let facts = extract("Environment: torch 1.9.0+cu111, keras 3.0.5");
        let pins = pins_for(&facts, &[Pin::parse("torch==2.4.1").unwrap()]);
        assert_eq!(requirements(&pins), vec!["torch==2.4.1", "keras==3.0.5"]);
    }

    #[test]
    fn package_flags_win_over_bug_json_which_wins_over_the_text() {
        let report = bundled(
            "Environment: torch 1.9.0, numpy 1.21.0",
            serde_json::json!({"packages": ["torch==2.1.0", "keras==3.3.3"]}),
        );
        let facts = extract(&report.text);
        let o = Options {
            packages: vec!["keras==3.0.5".into()],
            ..options()
        };
        let wanted = request(&report, &facts, &o).unwrap();
        assert_eq!(
            requirements(&wanted.pins),
            vec!["keras==3.0.5", "torch==2.1.0", "numpy==1.21.0"]
        );
    }

    #[test]
    fn a_wrong_pin_names_its_flag_or_its_file() {
        let report = bundled("text", serde_json::json!({"packages": "torch"}));
        let facts = extract(&report.text);
        let e = request(&report, &facts, &options()).unwrap_err();
        assert!(!e.is_usage());
        assert_eq!(
            e.to_string(),
            "bugs/01-x/bug.json: field `packages`: expected a list of \"NAME==VERSION\" strings"
        );
        let o = Options {
            packages: vec!["torch>=2".into()],
            ..options()
        };
        let e = request(&report, &facts, &o).unwrap_err();
        assert!(e.is_usage());
        assert!(
            e.to_string()
                .starts_with("--package `torch>=2`: expected NAME==VERSION")
        );
    }

    #[test]
    fn the_users_day_wins_over_the_reports_date() {
        let report = bundled(
            "Date: 2021-03-04\n\nimport torch fails",
            serde_json::json!({"framework": "pytorch"}),
        );
        let stated = as_of(&report, None, &[]).unwrap();
        assert_eq!(stated.date, "2021-03-04");
        assert!(stated.source.contains("Date:"), "{}", stated.source);
        let given = as_of(&report, Some("2020-01-02"), &[]).unwrap();
        assert_eq!(
            (given.date.as_str(), given.source.as_str()),
            ("2020-01-02", "--as-of")
        );
        assert_eq!(given.packages, stated.packages);
        let undated = bundled("no date here", serde_json::json!({}));
        assert_eq!(as_of(&undated, None, &[]), None);
    }

    #[test]
    fn settings_no_run_could_honour_are_refused() {
        assert!(options().check().is_ok());
        let bad = [
            Options {
                runs: 0,
                ..options()
            },
            Options {
                runs: 101,
                ..options()
            },
            Options {
                timeout_s: f64::NAN,
                ..options()
            },
            Options {
                repo: Some("/no/such/dir".into()),
                ..options()
            },
            Options {
                as_of: Some("2023-13-01".into()),
                ..options()
            },
        ];
        for o in bad {
            let e = o.check().unwrap_err();
            assert!(e.is_usage() && e.to_string().starts_with("--"), "{e}");
        }
        assert_eq!(options().limits().timeout_s, 120.0);
        assert_eq!(options().limits().output_mb, default_limits().output_mb);
    }
}
