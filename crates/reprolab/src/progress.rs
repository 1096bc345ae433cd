//! Progress on stderr: bars on a terminal; without one (CI, nohup, a log file) a plain line
//! every few seconds; nothing when printing JSON.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn target(json: bool) -> ProgressDrawTarget {
    if json {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    }
}

/// A bar over `len` trainings.
pub fn bar(len: u64, what: &str, json: bool) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), target(json));
    pb.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_prefix(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    if !json && !std::io::stderr().is_terminal() {
        log_lines(&pb, what.to_string());
    }
    pb
}

/// How often a job without a terminal says how far it is: 5 s, or `REPROLAB_PROGRESS_EVERY`
/// seconds.
fn log_every() -> Duration {
    std::env::var("REPROLAB_PROGRESS_EVERY")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(5), Duration::from_secs_f64)
}

/// Print `what pos/len (elapsed)` to stderr every [`log_every`] while `pb` lives and moves on
/// (a line only when something changed, so an idle wait does not flood a log).
fn log_lines(pb: &ProgressBar, what: String) {
    let weak = pb.downgrade();
    let every = log_every();
    std::thread::spawn(move || {
        let mut last = None;
        loop {
            std::thread::sleep(every);
            let Some(pb) = weak.upgrade() else { return };
            if pb.is_finished() {
                return;
            }
            let now = (pb.position(), pb.message());
            if last.as_ref() != Some(&now) {
                let len = pb.length().map_or(String::new(), |l| format!("/{l}"));
                let msg = if now.1.is_empty() {
                    String::new()
                } else {
                    format!(" {}", now.1)
                };
                eprintln!(
                    "{what}: {}{len}{msg} ({:.0} s)",
                    now.0,
                    pb.elapsed().as_secs_f64()
                );
                last = Some(now);
            }
        }
    });
}

/// A spinner with a changing message (e.g. provisioning steps).
pub fn spinner(what: &str, json: bool) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(None, target(json));
    pb.set_style(
        ProgressStyle::with_template("{spinner} {prefix} {wide_msg} ({elapsed})")
            .expect("valid template"),
    );
    pb.set_prefix(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// Print a line above the bar; without a terminal (logs, CI) print it to stderr plainly so that
/// long jobs still say what they are doing.
pub fn line(pb: &ProgressBar, msg: &str) {
    if pb.is_hidden() {
        eprintln!("{msg}");
    } else {
        pb.println(msg);
    }
}
