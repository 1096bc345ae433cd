//! The `reprolab` binary: parses the command line and wires the crates together.

mod cli;
mod commands;
mod context;
mod error;
mod llm;
mod llm_local;
mod plural;
mod progress;
mod table;
mod trainer;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    // The embedded LLM's kernels (candle, on rayon's global pool, reprolab's only rayon user)
    // get one thread unless RAYON_NUM_THREADS says otherwise: the trainings need the other
    // cores, and on 2 shared cores a second thread was measured to gain little or lose
    // (docs/llm-local.md). The pool is sized here rather than by setting the variable, which
    // every child process (uv, ray) would inherit.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // Fails only if the pool already exists, which nothing before this line creates.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build_global();
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version print and exit 0; usage errors exit 2, as JSON with --json.
        Err(e) if e.use_stderr() && std::env::args_os().any(|a| a == "--json") => {
            let message = e.render().to_string();
            let message = message.trim_end().trim_start_matches("error: ");
            return error::report(error::Kind::Usage, message, true);
        }
        Err(e) => e.exit(),
    };
    init_tracing(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let message = format!("cannot start the async runtime: {e}");
            return error::report(error::Kind::Infrastructure, &message, cli.global.json);
        }
    };
    let result = runtime.block_on(async {
        tokio::spawn(reprolab_exec::scratch::exit_on_signal());
        let g = &cli.global;
        match &cli.command {
            Command::Init(a) => commands::init::run(g, a).await,
            Command::Eval(a) => commands::eval::run(g, a).await,
            Command::Compare(a) => commands::compare::run(g, a).await,
            Command::Trace(a) => commands::trace::run(g, a).await,
            Command::Env(a) => commands::env::run(g, a).await,
            Command::BenchExec(a) => commands::bench_exec::run(g, a).await,
            Command::BenchReproduceExec(a) => commands::bench_reproduce_exec::run(g, a).await,
            Command::Mutate(a) => commands::mutate::run(g, a).await,
            Command::Faults(a) => commands::faults::run(g, a).await,
            Command::Repair(a) => commands::repair::run(g, a).await,
            Command::Bench(cli::BenchCommand::Repair(a)) => commands::bench_repair::run(g, a).await,
            Command::Bench(cli::BenchCommand::Localize(a)) => {
                commands::bench_localize::run(g, a).await
            }
            Command::Bench(cli::BenchCommand::Paper(a)) => commands::paper::bench(g, a).await,
            Command::Bench(cli::BenchCommand::Reproduce(a)) => {
                commands::reproduce::bench(g, a).await
            }
            Command::Localize(a) => commands::localize::run(g, a).await,
            Command::Llm(cli::LlmCommand::Chat(a)) => commands::llm::chat(g, a).await,
            Command::Llm(cli::LlmCommand::Calls(a)) => commands::llm::calls(g, a).await,
            Command::Neutrality(a) => commands::neutrality::run(g, a).await,
            Command::Codegen(c) => commands::codegen::run(g, c).await,
            Command::Reproduce(a) => commands::reproduce::run(g, a).await,
            Command::Paper(cli::PaperCommand::Grade(a)) => commands::paper::grade(g, a).await,
            Command::Paper(cli::PaperCommand::Verify(a)) => commands::paper::verify_cmd(g, a).await,
            Command::Paper(cli::PaperCommand::Implement(a)) => {
                commands::paper::implement(g, a).await
            }
            Command::Paper(cli::PaperCommand::Fingerprint(a)) => {
                commands::paper::fingerprint(g, a).await
            }
            Command::Paper(cli::PaperCommand::Lineage(a)) => commands::paper::lineage(g, a).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => error::report(error::classify(&e), &format!("{e:#}"), cli.global.json),
    }
}

fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("REPROLAB_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!(
            "reprolab={level},reprolab_exec={level},reprolab_store={level},reprolab_llm={level},reprolab_codegen={level},warn"
        ))
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}
