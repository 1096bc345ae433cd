//! The shortest script that still shows the bug: hierarchical delta debugging over the script's
//! statements (top-level statements first, then the bodies of what survived, level by level),
//! where a candidate is kept only when it still gets the same verdict by running it with every
//! seed. Statements come from Python's `ast` (`python -m reprolab.repro --statements`); a block
//! emptied by a deletion gets a `pass`, so every candidate is valid Python.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use crate::observe::Observation;
use crate::prepare::Prepared;
use crate::progress::Progress;
use crate::run::ScriptRunner;
use crate::verdict::Verdict;
use crate::verify::verify;

/// One statement of the script.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Stmt {
    /// First and last line, 1-based, inclusive (decorators included).
    pub start: usize,
    pub end: usize,
    /// Its indentation column.
    pub col: usize,
    /// Index of the enclosing statement, -1 at top level.
    pub parent: i64,
    /// Which block of the parent holds it (`body`, `orelse`, `handler0`, ...).
    pub block: String,
}

/// Ask the environment's Python for the statements of `script_path`.
pub fn statements(
    python: &Path,
    pythonpath: Option<&Path>,
    script_path: &Path,
) -> Result<Vec<Stmt>, String> {
    let mut cmd = std::process::Command::new(python);
    cmd.args(["-m", "reprolab.repro", "--statements"])
        .arg(script_path);
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).map_err(|_| {
        format!(
            "cannot list the script's statements: {}{}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// `script` without the statements in `removed` (and their children); an emptied block gets
/// `pass` at its indentation; runs of blank lines left behind become one.
pub fn render(script: &str, stmts: &[Stmt], removed: &BTreeSet<usize>) -> String {
    let gone = |mut i: usize| loop {
        if removed.contains(&i) {
            return true;
        }
        match usize::try_from(stmts[i].parent) {
            Ok(p) => i = p,
            Err(_) => return false,
        }
    };
    let lines: Vec<&str> = script.lines().collect();
    let mut drop = vec![false; lines.len() + 1];
    let mut pass_at: HashMap<usize, usize> = HashMap::new(); // line -> column
    let mut groups: HashMap<(i64, &str), Vec<usize>> = HashMap::new();
    for (i, s) in stmts.iter().enumerate() {
        groups
            .entry((s.parent, s.block.as_str()))
            .or_default()
            .push(i);
        if gone(i) {
            let end = s.end.min(lines.len());
            if s.start <= end {
                drop[s.start..=end].fill(true);
            }
        }
    }
    for ((parent, _), members) in &groups {
        let parent_alive = usize::try_from(*parent).map(|p| !gone(p)).unwrap_or(false);
        if parent_alive && members.iter().all(|&i| gone(i)) {
            let first = &stmts[members[0]];
            pass_at.insert(first.start, first.col);
        }
    }
    let mut out = String::new();
    for (n, line) in lines.iter().enumerate() {
        let number = n + 1;
        if let Some(col) = pass_at.get(&number) {
            out.push_str(&" ".repeat(*col));
            out.push_str("pass\n");
        } else if !drop[number] {
            let blank = line.trim().is_empty();
            if blank && (out.is_empty() || out.ends_with("\n\n")) {
                continue;
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// What minimisation reached.
#[derive(Debug, Clone)]
pub struct Minimized {
    pub script: String,
    /// Statements removed (children of a removed statement not counted).
    pub removed: usize,
    pub statements: usize,
    /// Candidates judged (each by running it with every seed; repeated ones come from the cache).
    pub tests: usize,
    /// The budget ran out before the result was 1-minimal.
    pub exhausted: bool,
}

/// Hierarchical ddmin. `still_shows(candidate)` must say whether the candidate gets the same
/// verdict; at most `budget` candidates are judged.
pub async fn minimize<F, Fut>(
    script: &str,
    stmts: &[Stmt],
    budget: usize,
    mut still_shows: F,
) -> Minimized
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = bool>,
{
    let mut removed: BTreeSet<usize> = BTreeSet::new();
    let mut tests = 0usize;
    let mut exhausted = false;
    let mut level: Vec<usize> = (0..stmts.len()).filter(|&i| stmts[i].parent < 0).collect();
    while !level.is_empty() && !exhausted {
        let mut items = level.clone();
        let mut n = 2usize;
        while !items.is_empty() {
            let chunk_len = items.len().div_ceil(n.min(items.len()));
            let chunks: Vec<Vec<usize>> = items.chunks(chunk_len).map(<[usize]>::to_vec).collect();
            let mut reduced = false;
            for chunk in chunks {
                if tests >= budget {
                    exhausted = true;
                    break;
                }
                let mut trial = removed.clone();
                trial.extend(chunk.iter().copied());
                tests += 1;
                if still_shows(render(script, stmts, &trial)).await {
                    removed = trial;
                    items.retain(|i| !chunk.contains(i));
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
            if exhausted || (!reduced && chunk_len == 1) {
                break;
            }
            if !reduced {
                n = (n * 2).min(items.len());
            }
        }
        // Next level: the children of the statements that survived.
        level = (0..stmts.len())
            .filter(|&i| {
                usize::try_from(stmts[i].parent)
                    .is_ok_and(|p| level.contains(&p) && !removed.contains(&p))
            })
            .collect();
    }
    Minimized {
        script: render(script, stmts, &removed),
        removed: removed.len(),
        statements: stmts.len(),
        tests,
        exhausted,
    }
}

/// Minimise a script that reproduces the bug: every candidate is judged like the original (all
/// seeds, the same rules, the store's cache). `Err` when the statements cannot be listed.
pub async fn minimize_script(
    facts: &crate::facts::Facts,
    report_text: &str,
    script: &str,
    runner: &ScriptRunner<'_>,
    seeds: &[u64],
    label: &str,
    budget: usize,
) -> Result<Minimized, String> {
    let scratch = reprolab_exec::scratch::Scratch::new("minimize").map_err(|e| e.to_string())?;
    let path = scratch.path().join("reproduce.py");
    std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
    let stmts = statements(&runner.env.python, runner.env.pythonpath.as_deref(), &path)?;
    let label = format!("{label} (minimising)");
    let label = label.as_str();
    // Most candidates lose the bug: one seed rejects them before all seeds confirm the others.
    let first = &seeds[..1.min(seeds.len())];
    Ok(
        minimize(script, &stmts, budget, |candidate: String| async move {
            let quick = verify(facts, report_text, &candidate, runner, label, first)
                .await
                .1;
            if quick.showing == 0 {
                return false;
            }
            verify(facts, report_text, &candidate, runner, label, seeds)
                .await
                .1
                .reproduced
        })
        .await,
    )
}

/// A reproducing script after minimisation, re-judged with every seed (from the cache) when
/// statements were removed, with what minimisation did for the verdict's origin.
#[derive(Debug, Clone)]
pub struct Shortened {
    /// The shortest version that still reproduces the bug; the given script when none is shorter.
    pub script: String,
    /// The runs and verdict of the shorter script; `None` when it is the given one.
    pub judged: Option<(Vec<Observation>, Verdict)>,
    /// Statements, removed, candidates judged, or the error that stopped minimisation.
    pub summary: serde_json::Value,
}

/// Minimise `script` (which reproduces the bug) against `p`'s report, judging at most `budget`
/// candidates.
pub async fn shorten(
    p: &Prepared,
    runner: &ScriptRunner<'_>,
    script: &str,
    label: &str,
    budget: usize,
    progress: &dyn Progress,
) -> Shortened {
    let (facts, text) = (&p.facts, p.report.text.as_str());
    let unchanged = |summary| Shortened {
        script: script.to_string(),
        judged: None,
        summary,
    };
    progress.begin("minimising the reproduction");
    let found = minimize_script(facts, text, script, runner, &p.seeds, label, budget).await;
    progress.end();
    match found {
        Ok(m) if m.removed > 0 => {
            let judged = verify(facts, text, &m.script, runner, label, &p.seeds).await;
            let exhausted = if m.exhausted {
                ", budget exhausted"
            } else {
                ""
            };
            progress.note(&format!(
                "minimised: {} of {} statements removed ({} candidates judged{exhausted})",
                m.removed, m.statements, m.tests
            ));
            Shortened {
                summary: json!({"statements": m.statements, "removed": m.removed,
                    "candidates_judged": m.tests, "budget_exhausted": m.exhausted}),
                script: m.script,
                judged: Some(judged),
            }
        }
        Ok(m) => unchanged(
            json!({"statements": m.statements, "removed": 0, "candidates_judged": m.tests}),
        ),
        Err(e) => unchanged(json!({"error": e})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt(start: usize, end: usize, col: usize, parent: i64, block: &str) -> Stmt {
        Stmt {
            start,
            end,
            col,
            parent,
            block: block.into(),
        }
    }

    const SCRIPT: &str = "import torch\nimport os\ndef f(x):\n    y = x + 1\n    return y\nfor i in range(3):\n    print(i)\nbug()\n";

    fn stmts() -> Vec<Stmt> {
        vec![
            stmt(1, 1, 0, -1, "body"),
            stmt(2, 2, 0, -1, "body"),
            stmt(3, 5, 0, -1, "body"),
            stmt(4, 4, 4, 2, "body"),
            stmt(5, 5, 4, 2, "body"),
            stmt(6, 7, 0, -1, "body"),
            stmt(7, 7, 4, 5, "body"),
            stmt(8, 8, 0, -1, "body"),
        ]
    }

    #[test]
    fn render_removes_children_and_fills_emptied_blocks() {
        let s = stmts();
        assert_eq!(
            render(SCRIPT, &s, &BTreeSet::from([1, 5])),
            "import torch\ndef f(x):\n    y = x + 1\n    return y\nbug()\n"
        );
        assert_eq!(
            render(SCRIPT, &s, &BTreeSet::from([3, 4])),
            "import torch\nimport os\ndef f(x):\n    pass\nfor i in range(3):\n    print(i)\nbug()\n"
        );
    }

    #[tokio::test]
    async fn ddmin_keeps_only_what_the_symptom_needs() {
        let s = stmts();
        // The "bug" needs `import torch` and the call; nothing else.
        let shows = |c: String| async move { c.contains("import torch") && c.contains("bug()") };
        let m = minimize(SCRIPT, &s, 100, shows).await;
        assert_eq!(m.script, "import torch\nbug()\n");
        assert!(!m.exhausted);
        assert!(m.tests <= 20, "{} tests", m.tests);
        // Needing the function body line drops only the other statement of its body.
        let shows = |c: String| async move { c.contains("y = x + 1") && c.contains("bug()") };
        let m = minimize(SCRIPT, &s, 100, shows).await;
        assert_eq!(m.script, "def f(x):\n    y = x + 1\nbug()\n");
    }

    #[tokio::test]
    async fn the_budget_bounds_the_work() {
        let m = minimize(SCRIPT, &stmts(), 2, |_c: String| async { false }).await;
        assert!(m.exhausted && m.tests == 2);
        assert_eq!(m.script, SCRIPT);
    }
}
