//! The neutrality graph in Graphviz DOT, coloured like the study's Figure 1, and the colours
//! themselves (the binary's SVG picture uses the same).
//!
//! The study's caption and text disagree on blue and green; this follows its text: blue =
//! significantly better than the known fix, green = the other alternative ground truths,
//! grey = neutral to the parent only, black = the known fix.

use std::fmt::Write as _;

use super::{NeutralityResult, Node, NodeClass};

/// Fill colour of a node class (CSS / Graphviz `#rrggbb`).
pub fn colour(class: NodeClass) -> &'static str {
    match class {
        NodeClass::Root => "#000000",
        NodeClass::BetterThanGt => "#1f5fbf",
        NodeClass::Alternative => "#2e9e4f",
        NodeClass::Neutral => "#a6a6a6",
        NodeClass::NotNeutral => "#e0e0e0",
        NodeClass::Unfinished => "#ffffff",
    }
}

/// The legend of the graph's classes: `(colour, text)`.
pub fn legend() -> Vec<(&'static str, &'static str)> {
    vec![
        (colour(NodeClass::Root), "known fix (ground truth)"),
        (
            colour(NodeClass::BetterThanGt),
            "alternative GT, significantly better than the fix",
        ),
        (colour(NodeClass::Alternative), "alternative GT"),
        (
            colour(NodeClass::Neutral),
            "neutral to its parent, worse than the fix",
        ),
    ]
}

/// A one-line description of a node: its move (or "known fix") and its mean.
pub fn describe(node: &Node) -> String {
    let what = node
        .change
        .as_ref()
        .map_or_else(|| "known fix".to_string(), |m| m.to_string());
    format!(
        "#{} {what} (mean {:.4}, n {})",
        node.id, node.runs.mean, node.runs.n
    )
}

/// DOT text of the graph: the root, every node in the graph and an edge from each node's
/// parent labelled with the move. Enqueued (expanded) nodes have a bold outline.
pub fn to_dot(result: &NeutralityResult, title: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph neutrality {{");
    let _ = writeln!(out, "  label={};", quote(title));
    let _ = writeln!(out, "  labelloc=t;");
    let _ = writeln!(
        out,
        "  node [shape=circle, style=filled, fontsize=9, width=0.3, fixedsize=true];"
    );
    let _ = writeln!(out, "  edge [fontsize=8, arrowsize=0.5];");
    for n in result.nodes.iter().filter(|n| n.in_graph()) {
        let class = n.class();
        let font = if class == NodeClass::Root {
            "white"
        } else {
            "black"
        };
        let pen = if n.enqueued { 2 } else { 1 };
        let _ = writeln!(
            out,
            "  n{} [label=\"{}\", fillcolor=\"{}\", fontcolor={font}, penwidth={pen}, tooltip={}];",
            n.id,
            n.id,
            colour(class),
            quote(&describe(n))
        );
    }
    for n in result.nodes.iter().filter(|n| n.in_graph()) {
        if let (Some(p), Some(mv)) = (n.parent, &n.change) {
            let _ = writeln!(
                out,
                "  n{p} -> n{} [label={}];",
                n.id,
                quote(&format!("{}={}", mv.key, super::neighbours::plain(&mv.to)))
            );
        }
    }
    out.push_str("}\n");
    out
}

/// A DOT string literal.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}
