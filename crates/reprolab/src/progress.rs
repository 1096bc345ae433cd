//! Progress on stderr: hidden when stderr is not a terminal or when printing JSON.

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
    pb
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
