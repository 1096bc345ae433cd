//! The outputs of `reprolab neutrality`: the neutrality graph as a radial tree, coloured like
//! the study's Figure 1, the graph's files (`graph.json`, `graph.dot`, `graph.svg`), the
//! run's [`Summary`] (`summary.json`) and the tables printed from it.

use std::path::{Path, PathBuf};

use reprolab_core::manifest::Subject;
use reprolab_neutrality::{
    Alternative, Alternatives, NeutralityResult, NeutralityStop, Table4, dot,
};
use reprolab_report::tree::{TreeNode, radial_tree};
use serde::Serialize;

use crate::results::serde_name;

/// The graph (the known fix and every node of the neutrality graph; neighbours that were not
/// neutral or not finished are left out) as a radial tree, a self-contained SVG document.
pub fn graph_svg(result: &NeutralityResult, title: &str) -> String {
    let ids: Vec<usize> = result
        .nodes
        .iter()
        .filter(|n| n.in_graph())
        .map(|n| n.id)
        .collect();
    let index = |id: usize| ids.iter().position(|x| *x == id);
    let nodes: Vec<TreeNode> = ids
        .iter()
        .map(|&id| {
            let n = &result.nodes[id];
            TreeNode {
                parent: n.parent.and_then(index),
                fill: dot::colour(n.class()).to_string(),
                title: dot::describe(n),
                bold: n.enqueued,
            }
        })
        .collect();
    let legend: Vec<(String, String)> = dot::legend()
        .into_iter()
        .map(|(c, t)| (c.to_string(), t.to_string()))
        .collect();
    radial_tree(title, &nodes, &legend)
}

/// A file of the neutrality analysis's output could not be written.
#[derive(Debug, thiserror::Error)]
#[error("writing {}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Writes `graph.json` (every node tried, with its runs and decision, and what the analysis
/// cost), `graph.dot` and `graph.svg` into `out`; returns their paths in that order.
pub fn write_graph(
    out: &Path,
    subject: &Subject,
    result: &NeutralityResult,
    wall_s: f64,
    trained: usize,
    cached: usize,
) -> Result<[PathBuf; 3], WriteError> {
    let title = format!(
        "{}: neutrality graph ({} nodes, {} alternative GTs)",
        subject.name,
        result.graph_size(),
        result.alternatives().count()
    );
    let json = serde_json::json!({
        "subject": subject.name, "fault_dir": subject.dir, "wall_s": wall_s,
        "trained": trained, "cached": cached, "result": result,
    });
    let paths = [
        out.join("graph.json"),
        out.join("graph.dot"),
        out.join("graph.svg"),
    ];
    let json = serde_json::to_string_pretty(&json).map_err(|e| WriteError {
        path: paths[0].clone(),
        source: std::io::Error::other(e),
    })? + "\n";
    let texts = [json, dot::to_dot(result, &title), graph_svg(result, &title)];
    for (p, t) in paths.iter().zip(texts) {
        std::fs::write(p, t).map_err(|source| WriteError {
            path: p.clone(),
            source,
        })?;
    }
    Ok(paths)
}

/// What one analysis cost and found, as written to `summary.json` and printed.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub subject: String,
    pub fault_dir: PathBuf,
    pub table4: Table4,
    pub tried: usize,
    pub levels: usize,
    /// Trainings asked (cached ones included), trained now, answered by the cache, and not
    /// needed thanks to sequential testing.
    pub trainings: usize,
    pub trained: usize,
    pub cached: usize,
    pub saved: usize,
    pub stopped_early: usize,
    pub unfinished: usize,
    pub stop: NeutralityStop,
    pub wall_s: f64,
    pub runs: usize,
    pub top_k: usize,
    pub split: reprolab_core::Split,
    pub sequential: bool,
    pub budget_s: Option<f64>,
    pub max_nodes: Option<usize>,
    pub workers: usize,
    pub alternatives_file: PathBuf,
    pub graph: [PathBuf; 3],
}

impl Summary {
    /// The line above the table: what was analysed, how.
    pub fn heading(&self) -> String {
        format!(
            "{}: neutrality analysis from the known fix ({} runs per node on the {} split, top-{}, {})",
            self.subject,
            self.runs,
            serde_name(self.split),
            self.top_k,
            if self.sequential {
                "sequential testing"
            } else {
                "no early stopping"
            }
        )
    }

    /// The study's Table 4 for this subject with what the analysis cost: header and one row.
    pub fn rows(&self) -> Vec<Vec<String>> {
        let t = &self.table4;
        vec![
            [
                "nodes",
                "alternative GTs",
                "complexity",
                "improvement",
                "tried",
                "trainings",
                "trained",
                "cached",
                "saved",
                "wall s",
            ]
            .map(String::from)
            .to_vec(),
            vec![
                t.nodes.to_string(),
                t.alternatives.to_string(),
                format!(
                    "{} ({})",
                    t.complexity.map_or("-".into(), |c| format!("{c:.2}")),
                    t.hyperparameters
                ),
                t.improvement.map_or("-".into(), |x| format!("{x:.4}")),
                self.tried.to_string(),
                self.trainings.to_string(),
                self.trained.to_string(),
                self.cached.to_string(),
                self.saved.to_string(),
                format!("{:.1}", self.wall_s),
            ],
        ]
    }

    /// Why the analysis stopped, and how much of it was cut short.
    pub fn stop_line(&self) -> String {
        let why = match self.stop {
            NeutralityStop::Exhausted => "the queue ran empty".into(),
            NeutralityStop::Nodes => format!("{} neighbours tried (--nodes)", self.tried),
            NeutralityStop::Time => format!(
                "the time budget ({:.0} s); rerun with a larger --budget to go on from the cache",
                self.budget_s.unwrap_or(0.0)
            ),
        };
        format!(
            "stopped at {why}; {} neighbours stopped early, {} unfinished",
            self.stopped_early, self.unfinished
        )
    }
}

/// The line above [`best_alternatives`]' table.
pub fn best_alternatives_heading(alts: &Alternatives) -> String {
    format!(
        "best alternatives (of {}; * = significantly better than the known fix, {} {:.4}):",
        alts.alternatives.len(),
        alts.metric,
        alts.gt_mean
    )
}

/// The ten alternatives that improve most on the known fix: header, then one row each (`*`
/// marks those significantly better than the known fix).
pub fn best_alternatives(alts: &Alternatives) -> Vec<Vec<String>> {
    let mut best: Vec<&Alternative> = alts.alternatives.iter().collect();
    best.sort_by(|a, b| b.improvement.total_cmp(&a.improvement));
    let mut rows = vec![
        [
            "fault labels",
            "changes from the known fix",
            "mean",
            "improvement",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for a in best.iter().take(10) {
        rows.push(vec![
            a.faults
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            a.from_gt.to_string(),
            format!("{:.4}", a.mean),
            format!(
                "{:+.4}{}",
                a.improvement,
                if a.better_than_gt { " *" } else { "" }
            ),
        ]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use reprolab_core::manifest::Goal;
    use reprolab_core::{Config, Split};
    use reprolab_neutrality::NodeClass;
    use reprolab_neutrality::{NeutralityStop, Node, dot, judge};
    use reprolab_repair::Group;

    use super::*;

    fn group(xs: &[f64]) -> Group {
        let s = reprolab_stats::summarize(xs);
        Group {
            mean: s.mean,
            std: s.std,
            n: xs.len(),
            samples: xs.iter().map(|x| Some(*x)).collect(),
            duration_s: 1.0,
        }
    }

    fn node(id: usize, parent: Option<usize>, runs: Group, gt: &Group, decided: bool) -> Node {
        Node {
            id,
            parent,
            depth: parent.map_or(0, |_| 1),
            change: None,
            config: Config::default(),
            decision: (decided && parent.is_some()).then(|| judge(gt, gt, &runs, Goal::Max, false)),
            runs,
            enqueued: parent.is_none(),
        }
    }

    /// The root, an alternative (as good as the fix), a neighbour far worse (not neutral) and
    /// one the deadline interrupted.
    fn result() -> NeutralityResult {
        let gt = group(&[0.90, 0.91, 0.92, 0.90, 0.91]);
        let nodes = vec![
            node(0, None, gt.clone(), &gt, false),
            node(
                1,
                Some(0),
                group(&[0.91, 0.90, 0.92, 0.91, 0.90]),
                &gt,
                true,
            ),
            node(
                2,
                Some(0),
                group(&[0.10, 0.12, 0.11, 0.10, 0.13]),
                &gt,
                true,
            ),
            node(3, Some(0), group(&[0.5]), &gt, false),
        ];
        NeutralityResult {
            goal: Goal::Max,
            split: Split::Holdout,
            runs: 5,
            top_k: 5,
            sequential: false,
            nodes,
            stop: NeutralityStop::Time,
            levels: 1,
            trainings: 16,
            saved: 0,
        }
    }

    #[test]
    fn the_graph_draws_the_root_and_the_nodes_in_the_graph_only() {
        let r = result();
        assert_eq!(r.nodes[1].class(), NodeClass::Alternative);
        assert_eq!(r.nodes[2].class(), NodeClass::NotNeutral);
        assert_eq!(r.nodes[3].class(), NodeClass::Unfinished);
        let svg = graph_svg(&r, "D1 <graph>");
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let titles: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("title"))
            .filter_map(|n| n.text())
            .collect();
        assert!(
            titles.iter().any(|t| t.starts_with("#0 known fix")),
            "{titles:?}"
        );
        assert!(titles.iter().any(|t| t.starts_with("#1 ")), "{titles:?}");
        assert!(
            !titles
                .iter()
                .any(|t| t.starts_with("#2 ") || t.starts_with("#3 "))
        );
        assert!(svg.contains(dot::colour(NodeClass::Alternative)));
        assert!(svg.contains("D1 &lt;graph&gt;"));
    }

    fn alternative(faults: &str, improvement: f64, better: bool) -> Alternative {
        Alternative {
            node: 1,
            patch: Config::default(),
            faults: vec![faults.parse().unwrap()],
            from_gt: Config::default(),
            complexity: 1,
            mean: 0.9 + improvement,
            std: 0.01,
            improvement,
            better_than_gt: better,
        }
    }

    fn alternatives(alternatives: Vec<Alternative>) -> Alternatives {
        Alternatives {
            fault: "D1".into(),
            metric: "accuracy".into(),
            goal: Goal::Max,
            split: Split::Holdout,
            runs: 5,
            gt_mean: 0.9,
            gt_std: 0.01,
            hyperparameters: 6,
            nodes: 2,
            tried: 3,
            trainings: 16,
            stop: NeutralityStop::Time,
            alternatives,
        }
    }

    #[test]
    fn the_best_ten_alternatives_come_first_marked_when_better_than_the_fix() {
        let alts = alternatives(
            (0..12)
                .map(|i| alternative("HLR", 0.01 * i as f64, i == 11))
                .collect(),
        );
        assert_eq!(
            best_alternatives_heading(&alts),
            "best alternatives (of 12; * = significantly better than the known fix, accuracy 0.9000):"
        );
        let rows = best_alternatives(&alts);
        assert_eq!(rows.len(), 11);
        assert_eq!(rows[1], ["HLR", "{}", "1.0100", "+0.1100 *"]);
        assert_eq!(rows[10][3], "+0.0200");
    }

    #[test]
    fn the_summary_prints_table_4_and_why_it_stopped() {
        let alts = alternatives(vec![alternative("ACH(1)", 0.02, false)]);
        let mut s = Summary {
            subject: "D1".into(),
            fault_dir: "faults/D1".into(),
            table4: alts.table4(),
            tried: 3,
            levels: 1,
            trainings: 16,
            trained: 10,
            cached: 6,
            saved: 4,
            stopped_early: 1,
            unfinished: 2,
            stop: NeutralityStop::Time,
            wall_s: 61.25,
            runs: 5,
            top_k: 5,
            split: Split::Holdout,
            sequential: true,
            budget_s: Some(60.0),
            max_nodes: None,
            workers: 2,
            alternatives_file: "alternatives.json".into(),
            graph: ["g.json".into(), "g.dot".into(), "g.svg".into()],
        };
        assert_eq!(
            s.heading(),
            "D1: neutrality analysis from the known fix (5 runs per node on the holdout split, \
             top-5, sequential testing)"
        );
        let rows = s.rows();
        assert_eq!(rows[0][..2], ["nodes", "alternative GTs"]);
        assert_eq!(
            rows[1],
            [
                "2", "1", "1.00 (6)", "0.0200", "3", "16", "10", "6", "4", "61.2"
            ]
        );
        assert_eq!(
            s.stop_line(),
            "stopped at the time budget (60 s); rerun with a larger --budget to go on from the \
             cache; 1 neighbours stopped early, 2 unfinished"
        );
        s.stop = NeutralityStop::Nodes;
        assert!(
            s.stop_line()
                .starts_with("stopped at 3 neighbours tried (--nodes);")
        );
        s.stop = NeutralityStop::Exhausted;
        s.sequential = false;
        assert!(s.stop_line().starts_with("stopped at the queue ran empty;"));
        assert!(s.heading().ends_with("top-5, no early stopping)"));
    }

    #[test]
    fn the_graph_files_are_written_as_json_dot_and_svg() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../benchmarks/faults/real/D1");
        let subject = Subject::load(&dir).unwrap();
        let out = tempfile::tempdir().unwrap();
        let paths = write_graph(out.path(), &subject, &result(), 12.5, 3, 4).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&paths[0]).unwrap()).unwrap();
        assert_eq!(json["subject"], subject.name.as_str());
        assert_eq!(
            (json["trained"].as_u64(), json["cached"].as_u64()),
            (Some(3), Some(4))
        );
        assert_eq!(json["result"]["trainings"], 16);
        let dot = std::fs::read_to_string(&paths[1]).unwrap();
        assert!(dot.starts_with("digraph neutrality {"), "{dot}");
        assert!(
            dot.contains("neutrality graph (1 nodes, 1 alternative GTs)"),
            "{dot}"
        );
        let svg = std::fs::read_to_string(&paths[2]).unwrap();
        roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let missing = out.path().join("no-such-dir");
        let e = write_graph(&missing, &subject, &result(), 0.0, 0, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("writing {}", missing.join("graph.json").display())
        );
    }
}
