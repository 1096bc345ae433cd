//! Figures of the neutrality analysis: the neutrality graph as a radial tree, coloured like the
//! study's Figure 1.

use reprolab_neutrality::{NeutralityResult, dot};
use reprolab_report::tree::{TreeNode, radial_tree};

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
}
