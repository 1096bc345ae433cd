//! Progress on stderr: bars and spinners on a terminal; without one (CI, nohup, a log file) a
//! plain line every few seconds (`REPROLAB_PROGRESS_EVERY`) when something moved; nothing when
//! printing JSON.

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

/// Without an unchanged line, how many intervals pass before the same line is printed again:
/// a long quiet step (a minute by default) still shows it is alive.
const HEARTBEAT: u32 = 12;

/// Print `what: pos/len msg (elapsed)` (a spinner: `what: msg (elapsed)`) to stderr every
/// [`log_every`] while `pb` lives and moves on; an unchanged line only every [`HEARTBEAT`]
/// intervals, so that an idle wait does not flood a log.
fn log_lines(pb: &ProgressBar, what: String) {
    let weak = pb.downgrade();
    let every = log_every();
    std::thread::spawn(move || {
        let mut last = None;
        let mut quiet = 0;
        loop {
            std::thread::sleep(every);
            let Some(pb) = weak.upgrade() else { return };
            if pb.is_finished() {
                return;
            }
            let now = (pb.position(), pb.message());
            quiet += 1;
            if last.as_ref() != Some(&now) || quiet >= HEARTBEAT {
                eprintln!("{}", log_line(&what, &pb, &now.1));
                last = Some(now);
                quiet = 0;
            }
        }
    });
}

fn log_line(what: &str, pb: &ProgressBar, msg: &str) -> String {
    let position = pb
        .length()
        .map_or(String::new(), |l| format!(" {}/{l}", pb.position()));
    let msg = if msg.is_empty() {
        String::new()
    } else {
        format!(" {msg}")
    };
    format!(
        "{what}:{position}{msg} ({:.0} s)",
        pb.elapsed().as_secs_f64()
    )
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
    if !json && !std::io::stderr().is_terminal() {
        log_lines(&pb, what.to_string());
    }
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

/// The library's long steps (`reprolab_reproduce::progress::Progress`) as spinners, one at a
/// time; its notes on stderr.
pub struct Steps {
    json: bool,
    current: std::sync::Mutex<Option<ProgressBar>>,
}

impl Steps {
    pub fn new(json: bool) -> Steps {
        Steps {
            json,
            current: std::sync::Mutex::new(None),
        }
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl reprolab_reproduce::progress::Progress for Steps {
    fn begin(&self, step: &str) {
        let previous = self.current().replace(spinner(step, self.json));
        if let Some(sp) = previous {
            sp.finish_and_clear();
        }
    }

    fn end(&self) {
        if let Some(sp) = self.current().take() {
            sp.finish_and_clear();
        }
    }

    fn note(&self, line: &str) {
        eprintln!("note: {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_show_the_count_only_when_there_is_one() {
        let bar = ProgressBar::hidden();
        bar.set_length(10);
        bar.set_position(3);
        assert_eq!(log_line("measure", &bar, "D4"), "measure: 3/10 D4 (0 s)");
        let spinner = ProgressBar::hidden();
        spinner.unset_length();
        assert_eq!(
            log_line("python env", &spinner, "installing torch"),
            "python env: installing torch (0 s)"
        );
    }
}
