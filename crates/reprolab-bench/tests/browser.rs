//! The committed HTML reports in docs/results, opened in a real headless Chromium: no script
//! error, every figure drawn with data, the sortable tables' filter and sort working, and a
//! screenshot written (committed to docs/results/screenshots with `REPROLAB_WRITE_FIGURES=1`).
//!
//! Skipped with a printed reason when no Chromium is installed (Debian: `apt-get install
//! chromium`); the test installs nothing itself.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Put first into the page under test: records every script error from then on.
const ERROR_LISTENER: &str = r#"<script>
window.reprolabErrors = [];
window.addEventListener("error", function (e) { window.reprolabErrors.push(String(e.message)); });
</script>"#;

/// Appended to the page under test: drives the first sortable table (filter rows, sort by the
/// first column) and writes what happened, and the script errors, into `<body data-check=…
/// data-errors=…>`, which `--dump-dom` shows.
const PROBE: &str = r#"<script>
(function () {
  window.addEventListener("load", function () {
    var checks = [];
    var t = document.querySelector("table.sortable");
    if (t) {
      var filter = t.previousElementSibling;
      var rows = Array.prototype.slice.call(t.rows, 1);
      var probe = rows[rows.length - 1].cells[0].textContent;
      filter.value = probe;
      filter.dispatchEvent(new Event("input"));
      var shown = rows.filter(function (r) { return r.style.display !== "none"; });
      var filtered = shown.length >= 1 && shown.length < rows.length &&
        shown.every(function (r) { return r.textContent.toLowerCase().indexOf(probe.toLowerCase()) >= 0; });
      checks.push("filter:" + (filtered ? "ok" : "broken"));
      filter.value = "";
      filter.dispatchEvent(new Event("input"));
      t.rows[0].cells[0].click();
      var firsts = Array.prototype.slice.call(t.rows, 1).map(function (r) { return r.cells[0].textContent; });
      var sorted = firsts.every(function (x, i) { return i === 0 || firsts[i - 1].localeCompare(x) <= 0; });
      checks.push("sort:" + (sorted ? "ok" : "broken"));
    }
    document.body.setAttribute("data-check", checks.join(" ") || "no-table");
    document.body.setAttribute("data-errors", window.reprolabErrors.join(" | "));
  });
})();
</script>"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
    .find(|p| p.is_file())
}

fn headless(browser: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
        // Long enough for the load handlers to run before the DOM is dumped.
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The page's DOM after its scripts and the probe ran.
fn dom_after_scripts(browser: &Path, page: &Path, profile: &Path) -> String {
    let out = headless(browser, profile)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed on {page:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn attribute<'a>(dom: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let Some(start) = dom.find(&key).map(|i| i + key.len()) else {
        return "";
    };
    dom[start..].split('"').next().unwrap_or("")
}

/// Every inline SVG figure, with whether it draws data (marks beyond a frame) and no NaN.
fn figures(dom: &str) -> Vec<(usize, bool)> {
    dom.match_indices("<svg")
        .map(|(start, _)| {
            let end = dom[start..].find("</svg>").map_or(dom.len(), |e| start + e);
            let svg = &dom[start..end];
            let marks = ["<path", "<rect", "<circle", "<polyline", "<line"]
                .iter()
                .map(|m| svg.matches(m).count())
                .sum::<usize>();
            (marks, marks >= 3 && !svg.contains("NaN"))
        })
        .collect()
}

#[test]
fn committed_reports_render_in_a_real_browser_with_data_and_working_tables() {
    let Some(browser) = chromium() else {
        println!(
            "SKIPPED: no Chromium on PATH (Debian: apt-get install chromium); the reports were \
             not opened in a browser"
        );
        return;
    };
    let results = repo().join("docs/results");
    let mut reports: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path().join("report.html"))
        .filter(|p| p.is_file())
        .collect();
    reports.sort();
    assert!(reports.len() >= 4, "{reports:?}");
    let write = std::env::var_os("REPROLAB_WRITE_FIGURES").is_some();
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("profile");
    let mut drawn = 0;
    for report in &reports {
        let name = report
            .parent()
            .and_then(Path::file_name)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // A copy with the probe, beside the original so that relative links still resolve.
        let html = std::fs::read_to_string(report).unwrap();
        let probed = report.with_file_name(format!(".probe-{}.html", std::process::id()));
        let with_probe = html
            .replacen("<head>", &format!("<head>{ERROR_LISTENER}"), 1)
            .replace("</body>", &format!("{PROBE}</body>"));
        std::fs::write(&probed, with_probe).unwrap();
        let dom = dom_after_scripts(&browser, &probed, &profile);
        std::fs::remove_file(&probed).unwrap();
        assert!(dom.contains("data-check="), "{name}: the probe did not run");
        assert_eq!(attribute(&dom, "data-errors"), "", "{name}: script errors");
        let check = attribute(&dom, "data-check");
        assert!(!check.contains("broken"), "{name}: {check}");
        if html.contains("class=\"sortable\"") {
            assert_eq!(check, "filter:ok sort:ok", "{name}");
        }
        for (i, (marks, has_data)) in figures(&dom).into_iter().enumerate() {
            assert!(has_data, "{name}: figure {i} draws {marks} marks (or NaN)");
            drawn += 1;
        }

        let shot = tmp.path().join(format!("{name}.png"));
        let out = headless(&browser, &profile)
            .arg("--window-size=1280,2200")
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}", report.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        let png = std::fs::read(&shot).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{name}: screenshot of {} bytes",
            png.len()
        );
        if write {
            let dir = results.join("screenshots");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{name}.png")), &png).unwrap();
        }
    }
    assert!(drawn >= 5, "only {drawn} figures across the reports");
}
