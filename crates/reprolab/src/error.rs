//! How a failed command ends: its exit code and the kind of its error, classified from the
//! error's chain (the crates' typed errors, or an [`Infrastructure`] marker a command attaches
//! as context), and the error printed for people or, with `--json`, as a JSON object on stdout.
//!
//! Exit codes: 0 ok; 1 a negative verdict or a failed user program (returned by the commands,
//! never classified from an error; [`Kind::Program`] when a command stops on it); 2 a usage or
//! input error; 3 infrastructure (the Python environment, the store, the network or an LLM
//! server).

use std::fmt;

use reprolab_codegen::generate::GenerateError;
use reprolab_codegen::runner::RunnerError;
use reprolab_codegen::task::FileError;
use reprolab_codegen::{HarnessError, OptionsError, RunDirError, SelectError};
use reprolab_core::{ManifestError, ProgramError, TemplateError};
use reprolab_exec::env::EnvError;
use reprolab_exec::{EvalError, WorkerError};
use reprolab_faults::CampaignError;
use reprolab_llm::LlmError;
use reprolab_localize::llm::LlmFlError;
use reprolab_paper::benchmark::BenchmarkError;
use reprolab_paper::codefacts::CodeFactsError;
use reprolab_paper::implement::ImplementError;
use reprolab_paper::{DocumentError, FingerprintError, LineageError, RubricError};
use reprolab_repair::RepairError;
use reprolab_reproduce::PrepareError;
use reprolab_reproduce::bench::ModelUnreachable;
use reprolab_reproduce::outputs::OutputError;
use reprolab_scaffold::ScaffoldError;
use reprolab_store::StoreError;
use serde::Serialize;

/// What went wrong, as far as whoever runs the command is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Flags or arguments: fix the command line.
    Usage,
    /// A file given (subject, manifest, config, tasks, recording) is missing or wrong.
    Input,
    /// The machinery: Python environment, store, workers, network, LLM server.
    Infrastructure,
    /// The user's program failed where a command needs it to train (`faults --measure`): exit
    /// 1, as a failed `eval`. Commands report it themselves; [`classify`] never returns it.
    Program,
}

impl Kind {
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Usage | Kind::Input => 2,
            Kind::Infrastructure => 3,
            Kind::Program => 1,
        }
    }
}

/// Context that marks an error as infrastructure: `.context(Infrastructure("creating a scratch
/// directory"))` reads as the plain message.
#[derive(Debug)]
pub struct Infrastructure(pub &'static str);

impl fmt::Display for Infrastructure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

fn llm_kind(e: &LlmError) -> Kind {
    match e {
        // The request or the credentials are wrong: the user's to fix.
        LlmError::Http { status, .. } if (400..500).contains(status) && *status != 408 => {
            Kind::Input
        }
        LlmError::Http { .. }
        | LlmError::Timeout { .. }
        | LlmError::Connect { .. }
        | LlmError::Transport { .. }
        | LlmError::RateLimited { .. }
        | LlmError::BadResponse(_) => Kind::Infrastructure,
        LlmError::Config(_) => Kind::Usage,
        LlmError::BudgetExceeded { .. } | LlmError::ReplayMiss { .. } | LlmError::Cassette(_) => {
            Kind::Input
        }
    }
}

fn store_kind(e: &StoreError) -> Kind {
    if e.is_wrong_file() {
        Kind::Input
    } else {
        Kind::Infrastructure
    }
}

/// The kinds of the code-generation benchmark's errors.
fn codegen_kind(e: &(dyn std::error::Error + 'static)) -> Option<Kind> {
    if let Some(e) = e.downcast_ref::<RunDirError>() {
        return Some(if e.is_wrong_file() {
            Kind::Input
        } else {
            Kind::Infrastructure
        });
    }
    if let Some(e) = e.downcast_ref::<SelectError>() {
        return Some(match e {
            SelectError::NoMatch { .. } => Kind::Usage,
            SelectError::UnknownTasks { .. } => Kind::Input,
        });
    }
    if let Some(e) = e.downcast_ref::<GenerateError>() {
        return Some(match e {
            // The model's adapter decides (an LLM server's failure, or a wrong request).
            GenerateError::Model { source, .. } => source
                .downcast_ref::<LlmError>()
                .map_or(Kind::Infrastructure, llm_kind),
            GenerateError::Count { .. } | GenerateError::Write { .. } => Kind::Infrastructure,
        });
    }
    if let Some(e) = e.downcast_ref::<HarnessError>() {
        return Some(match e {
            HarnessError::Store(s) => store_kind(s),
            HarnessError::Repository { .. } => Kind::Input,
            _ => Kind::Infrastructure,
        });
    }
    if let Some(e) = e.downcast_ref::<CampaignError>() {
        return Some(match e {
            CampaignError::Settings(_) => Kind::Usage,
            CampaignError::OriginalFails { .. } => Kind::Input,
            // The trainer's error decides (an `EvalError`).
            CampaignError::Train { source, .. } => {
                typed_kind(source.as_ref()).unwrap_or(Kind::Infrastructure)
            }
            CampaignError::Count { .. } => Kind::Infrastructure,
        });
    }
    if e.is::<OptionsError>() {
        return Some(Kind::Usage);
    }
    if e.is::<RunnerError>() {
        return Some(Kind::Infrastructure);
    }
    if e.is::<FileError>() {
        return Some(Kind::Input);
    }
    None
}

/// The kinds of bug reproduction's errors.
fn reproduce_kind(e: &(dyn std::error::Error + 'static)) -> Option<Kind> {
    if let Some(e) = e.downcast_ref::<reprolab_reproduce::ReportError>() {
        return Some(if e.is_input() {
            Kind::Input
        } else {
            Kind::Infrastructure
        });
    }
    if let Some(e) = e.downcast_ref::<PrepareError>() {
        return Some(match e {
            PrepareError::Environment(_) => Kind::Infrastructure,
            e if e.is_usage() => Kind::Usage,
            _ => Kind::Input,
        });
    }
    // The directory given for the files (`--out`) cannot take them.
    if e.is::<OutputError>() {
        return Some(Kind::Input);
    }
    if e.is::<ModelUnreachable>() {
        return Some(Kind::Infrastructure);
    }
    None
}

fn typed_kind(e: &(dyn std::error::Error + 'static)) -> Option<Kind> {
    if let Some(k) = codegen_kind(e) {
        return Some(k);
    }
    if let Some(k) = reproduce_kind(e) {
        return Some(k);
    }
    if let Some(e) = e.downcast_ref::<RepairError>() {
        return Some(match e {
            // The objective could not train at all: a broken environment.
            RepairError::Objective(_) => Kind::Infrastructure,
            RepairError::Settings(_) | RepairError::Patch(_) | RepairError::EmptySpace => {
                Kind::Input
            }
        });
    }
    if let Some(e) = e.downcast_ref::<ScaffoldError>() {
        return Some(if e.is_infrastructure() {
            Kind::Infrastructure
        } else if e.is_usage() {
            Kind::Usage
        } else {
            Kind::Input
        });
    }
    if let Some(e) = e.downcast_ref::<LlmFlError>() {
        return Some(match e {
            LlmFlError::Program(_) => Kind::Input,
            LlmFlError::Llm(l) => llm_kind(l),
        });
    }
    if let Some(e) = e.downcast_ref::<LlmError>() {
        return Some(llm_kind(e));
    }
    if let Some(e) = e.downcast_ref::<EvalError>() {
        return Some(match e {
            EvalError::Source { .. } => Kind::Input,
            EvalError::Store(s) => store_kind(s),
            EvalError::Task(_) | EvalError::Extra { .. } => Kind::Infrastructure,
        });
    }
    if let Some(e) = e.downcast_ref::<StoreError>() {
        return Some(store_kind(e));
    }
    if e.is::<EnvError>() || e.is::<WorkerError>() {
        return Some(Kind::Infrastructure);
    }
    if e.is::<ManifestError>() || e.is::<ProgramError>() || e.is::<TemplateError>() {
        return Some(Kind::Input);
    }
    // A paper, a corpus, a rubric, a fingerprint or a paper benchmark the user named: missing,
    // unreadable or malformed alike.
    if e.is::<DocumentError>()
        || e.is::<LineageError>()
        || e.is::<RubricError>()
        || e.is::<FingerprintError>()
        || e.is::<BenchmarkError>()
    {
        return Some(Kind::Input);
    }
    if e.is::<CodeFactsError>() {
        return Some(Kind::Infrastructure);
    }
    if let Some(e) = e.downcast_ref::<ImplementError>() {
        return Some(match e {
            ImplementError::Model(l) => llm_kind(l),
            ImplementError::State { .. } => Kind::Input,
            ImplementError::Io { .. } | ImplementError::Verify(_) => Kind::Infrastructure,
        });
    }
    if e.is::<clap::Error>() {
        return Some(Kind::Usage);
    }
    None
}

/// The kind of a command's error: the first typed error or marker in its chain decides; an
/// unknown error whose message starts with a flag (`--runs must be ...`) is a usage error, any
/// other an input error.
pub fn classify(e: &anyhow::Error) -> Kind {
    if e.downcast_ref::<Infrastructure>().is_some() {
        return Kind::Infrastructure;
    }
    let typed = [
        e.downcast_ref::<LlmError>().map(llm_kind),
        e.downcast_ref::<EvalError>().and_then(|x| typed_kind(x)),
        e.downcast_ref::<StoreError>().map(store_kind),
        e.downcast_ref::<EnvError>().map(|_| Kind::Infrastructure),
        e.downcast_ref::<ManifestError>().map(|_| Kind::Input),
    ];
    if let Some(k) = typed.into_iter().flatten().next() {
        return k;
    }
    if let Some(k) = e.chain().find_map(typed_kind) {
        return k;
    }
    if e.to_string().starts_with("--") {
        Kind::Usage
    } else {
        Kind::Input
    }
}

/// `{"error": {"kind": ..., "message": ...}}`.
pub fn json(kind: Kind, message: &str) -> String {
    serde_json::json!({"error": {"kind": kind, "message": message}}).to_string()
}

/// Prints the error (on stderr; with `--json` also as JSON on stdout) and returns its exit code.
pub fn report(kind: Kind, message: &str, json_output: bool) -> std::process::ExitCode {
    if json_output {
        println!("{}", json(kind, message));
    }
    eprintln!("error: {message}");
    std::process::ExitCode::from(kind.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::{Context, anyhow};

    #[test]
    fn an_io_cause_is_shown_once_by_the_alternate_format() {
        let missing = std::env::temp_dir().join("reprolab-no-such-benchmark-dir");
        let e = reprolab_faults::read_benchmark(&missing).unwrap_err();
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(shown.matches("(os error").count(), 1, "{shown}");
        assert!(shown.contains("reprolab-no-such-benchmark-dir"), "{shown}");
    }

    #[test]
    fn typed_errors_and_markers_decide_the_kind() {
        let store = StoreError::Locked {
            path: "s.db".into(),
            what: "writing".into(),
        };
        let e = anyhow::Error::from(store).context("opening the store");
        assert_eq!(classify(&e), Kind::Infrastructure);
        let e = anyhow!(EnvError::NoPython("python3".into())).context("preparing");
        assert_eq!(classify(&e), Kind::Infrastructure);
        let e = Err::<(), _>(std::io::Error::other("disk full"))
            .context(Infrastructure("creating a scratch directory"))
            .unwrap_err();
        assert_eq!(classify(&e), Kind::Infrastructure);
        assert_eq!(e.to_string(), "creating a scratch directory");
        let e = anyhow!(EvalError::Store(StoreError::Locked {
            path: "s.db".into(),
            what: "reading".into()
        }));
        assert_eq!(classify(&e), Kind::Infrastructure);
    }

    #[test]
    fn the_library_crates_typed_errors_are_classified() {
        let io = || std::io::Error::other("disk full");
        let e = anyhow!(WorkerError::StartupTimeout(std::time::Duration::from_secs(
            1
        )));
        assert_eq!(classify(&e), Kind::Infrastructure);
        let e = anyhow!(RunnerError::NotStarted(WorkerError::Gone {
            output: String::new()
        }))
        .context("running the samples");
        assert_eq!(classify(&e), Kind::Infrastructure);
        let wrong_dir = RunDirError::NotRunDir {
            path: "x/run.json".into(),
            dir: "x".into(),
            source: io(),
        };
        assert_eq!(classify(&anyhow!(wrong_dir)), Kind::Input);
        let full = RunDirError::Io {
            path: "x/results.jsonl".into(),
            source: io(),
        };
        assert_eq!(classify(&anyhow!(full)), Kind::Infrastructure);
        let no_match = SelectError::NoMatch {
            pattern: "x".into(),
            ids: "a".into(),
        };
        assert_eq!(classify(&anyhow!(no_match)), Kind::Usage);
        assert_eq!(classify(&anyhow!(OptionsError::FreshOnRay)), Kind::Usage);
        let unknown = SelectError::UnknownTasks { ids: "x".into() };
        assert_eq!(classify(&anyhow!(unknown)), Kind::Input);
        let tasks = FileError::single(std::path::Path::new("t.jsonl"), 1, "id", "missing");
        assert_eq!(classify(&anyhow!(tasks).context("t.jsonl")), Kind::Input);
        let program = ProgramError::Read {
            path: "train.py".into(),
            source: io(),
        };
        assert_eq!(classify(&anyhow!(program)), Kind::Input);
        let fl = LlmFlError::Llm(LlmError::Timeout {
            url: "u".into(),
            after: std::time::Duration::from_secs(1),
        });
        assert_eq!(
            classify(&anyhow!(fl).context("LLM localisation of x")),
            Kind::Infrastructure
        );
        let server_down = GenerateError::Model {
            model: "m".into(),
            task: "t".into(),
            source: Box::new(LlmError::Connect {
                url: "u".into(),
                detail: "refused".into(),
            }),
        };
        assert_eq!(classify(&anyhow!(server_down)), Kind::Infrastructure);
        let refused = GenerateError::Model {
            model: "m".into(),
            task: "t".into(),
            source: Box::new(LlmError::Http {
                url: "u".into(),
                status: 401,
                body_excerpt: String::new(),
                retry_after: None,
            }),
        };
        assert_eq!(classify(&anyhow!(refused)), Kind::Input);
        let settings = CampaignError::Settings(reprolab_faults::SettingError {
            name: "runs",
            value: "1".into(),
            expected: "at least 2",
        });
        assert_eq!(classify(&anyhow!(settings)), Kind::Usage);
        let broken = CampaignError::Train {
            what: "mutant x".into(),
            source: Box::new(EvalError::Task("the worker died".into())),
        };
        assert_eq!(
            classify(&anyhow!(broken).context("mutating x")),
            Kind::Infrastructure
        );
        let objective = RepairError::Objective("the worker died".into());
        assert_eq!(
            classify(&anyhow!(objective).context("x")),
            Kind::Infrastructure
        );
        let template = TemplateError::NoValue {
            name: "seed".into(),
        };
        assert_eq!(classify(&anyhow!(template)), Kind::Input);
        let scan = DocumentError::NoTextLayer {
            path: "scan.pdf".into(),
        };
        assert_eq!(classify(&anyhow!(scan)), Kind::Input);
        let corpus = LineageError::NotADirectory {
            path: "papers".into(),
        };
        assert_eq!(classify(&anyhow!(corpus)), Kind::Input);
    }

    #[test]
    fn reproduction_errors_split_between_flags_files_and_the_machine() {
        assert_eq!(classify(&anyhow!(PrepareError::Runs(0))), Kind::Usage);
        let meta = PrepareError::MetaPackages {
            path: "bugs/x/bug.json".into(),
            detail: "expected a list".into(),
        };
        assert_eq!(classify(&anyhow!(meta)), Kind::Input);
        let env = PrepareError::Environment(EnvError::NoPython("python3".into()));
        assert_eq!(classify(&anyhow!(env)), Kind::Infrastructure);
        let out = OutputError {
            dir: "out".into(),
            source: std::io::Error::other("read-only"),
        };
        assert_eq!(classify(&anyhow!(out)), Kind::Input);
        let stop = ModelUnreachable("connection refused".into());
        assert_eq!(classify(&anyhow!(stop)), Kind::Infrastructure);
    }

    #[test]
    fn scaffolding_errors_split_between_the_flag_the_script_and_the_machine() {
        let entry = ScaffoldError::EntrySpec {
            spec: "train".into(),
        };
        assert_eq!(classify(&anyhow!(entry)), Kind::Usage);
        let none = ScaffoldError::NoScript { dir: "x".into() };
        assert_eq!(classify(&anyhow!(none)), Kind::Input);
        let python = ScaffoldError::Start {
            python: "python3".into(),
            source: std::io::Error::other("not found"),
        };
        let e = anyhow!(python);
        assert_eq!(classify(&e), Kind::Infrastructure);
        assert_eq!(
            format!("{e:#}"),
            "reading the training script: running python3: not found"
        );
    }

    #[test]
    fn llm_errors_split_between_the_user_and_the_server() {
        let http = |status| LlmError::Http {
            url: "u".into(),
            status,
            body_excerpt: String::new(),
            retry_after: None,
        };
        assert_eq!(classify(&anyhow!(http(401))), Kind::Input);
        assert_eq!(classify(&anyhow!(http(503))), Kind::Infrastructure);
        let connect = LlmError::Connect {
            url: "u".into(),
            detail: "refused".into(),
        };
        assert_eq!(
            classify(&anyhow!(connect).context("asking")),
            Kind::Infrastructure
        );
        assert_eq!(
            classify(&anyhow!(LlmError::Config("x".into()))),
            Kind::Usage
        );
    }

    #[test]
    fn untyped_errors_are_usage_when_they_name_a_flag_else_input() {
        assert_eq!(classify(&anyhow!("--runs must be at least 2")), Kind::Usage);
        assert_eq!(
            classify(&anyhow!("subjects/x: no [fix] table")),
            Kind::Input
        );
        assert_eq!(Kind::Usage.exit_code(), 2);
        assert_eq!(Kind::Input.exit_code(), 2);
        assert_eq!(Kind::Infrastructure.exit_code(), 3);
        assert_eq!(Kind::Program.exit_code(), 1);
        let v: serde_json::Value = serde_json::from_str(&json(Kind::Usage, "bad \"x\"")).unwrap();
        assert_eq!(v["error"]["kind"], "usage");
        assert_eq!(v["error"]["message"], "bad \"x\"");
    }
}
