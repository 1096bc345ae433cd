//! What a localisation engine answers when it misses: a fault-type confusion matrix (ground
//! truth in rows, answers in columns) and a bar chart of RC, PR and F3 per engine.

use std::collections::BTreeMap;

use reprolab_report::{Cell, Figure, Table, svg};

use super::Row;

/// `ACH(2)` → `ACH`: the matrix compares types, as RC and PR do (they ignore layers too).
fn kind(label: &str) -> &str {
    label.split('(').next().unwrap_or(label)
}

/// Column of a ground-truth type that the answer has no type for at all.
const NOTHING: &str = "(nothing)";

/// Counts over `rows` (one engine's): for each ground-truth type of a fault, a hit on the
/// diagonal when the answer has that type, else one count for each answered type the ground
/// truth does not have (what the engine said instead), or for "(nothing)" when it said nothing
/// else.
pub fn matrix(rows: &[&Row]) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut m: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for r in rows {
        let gt: Vec<&str> = r.gt.iter().map(|g| kind(g)).collect();
        let answered: Vec<&str> = r.answer.iter().map(|a| kind(a)).collect();
        let instead: Vec<&str> = answered
            .iter()
            .copied()
            .filter(|a| !gt.contains(a))
            .collect();
        for g in &gt {
            let row = m.entry(g.to_string()).or_default();
            if answered.contains(g) {
                *row.entry(g.to_string()).or_default() += 1;
            } else if instead.is_empty() {
                *row.entry(NOTHING.into()).or_default() += 1;
            } else {
                for a in &instead {
                    *row.entry(a.to_string()).or_default() += 1;
                }
            }
        }
    }
    m
}

/// The matrix of one engine as a table; the diagonal (hits) is marked.
pub fn table(engine: &str, rows: &[&Row]) -> Table {
    let m = matrix(rows);
    let mut columns: Vec<String> = m.keys().cloned().collect();
    for answers in m.values() {
        for a in answers.keys() {
            if !columns.contains(a) && a != NOTHING {
                columns.push(a.clone());
            }
        }
    }
    columns.push(NOTHING.into());
    let mut headers = vec!["ground truth \\ answer".to_string()];
    headers.extend(columns.iter().cloned());
    let table_rows = m
        .iter()
        .map(|(g, answers)| {
            let mut line: Vec<Cell> = vec![g.clone().into()];
            line.extend(columns.iter().map(|c| {
                let n = answers.get(c).copied().unwrap_or(0);
                let text = if n == 0 { String::new() } else { n.to_string() };
                Cell::marked(text, c == g)
            }));
            line
        })
        .collect();
    Table {
        caption: format!(
            "{engine}: fault-type confusion. Per ground-truth type of each fault: a hit (bold \
             diagonal) when the answer has the type, else each answered type the ground truth \
             lacks, or {NOTHING}. Types as labelled (RC counts AAL and ARM as ACH, LRM as LAD)."
        ),
        headers,
        rows: table_rows,
    }
}

/// RC, PR and F3 averaged per engine, as bars.
pub fn scores_figure(rows: &[Row], engines: &[String]) -> Figure {
    let mut bars = Vec::new();
    for e in engines {
        let mine: Vec<&Row> = rows.iter().filter(|r| &r.engine == e).collect();
        if mine.is_empty() {
            continue;
        }
        let n = mine.len() as f64;
        for (name, f) in [
            ("RC", (|r: &Row| r.rc) as fn(&Row) -> f64),
            ("PR", |r| r.pr),
            ("F3", |r| r.f3),
        ] {
            bars.push((
                format!("{e} {name}"),
                mine.iter().map(|r| f(r)).sum::<f64>() / n,
            ));
        }
    }
    Figure {
        name: "scores".into(),
        caption: "RC, PR and F3 per engine, averaged over faults (before neutrality analysis)"
            .into(),
        svg: svg::bar_chart("Localisation scores", "mean over faults", &bars, Some(1.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(gt: &[&str], answer: &[&str]) -> Row {
        Row {
            fault: "f".into(),
            origin: "real".into(),
            engine: "static".into(),
            gt: gt.iter().map(|s| s.to_string()).collect(),
            answer: answer.iter().map(|s| s.to_string()).collect(),
            rc: 0.0,
            pr: 0.0,
            f3: 0.0,
            stability: 1.0,
            repeats: 1,
            seconds: 0.0,
            gt_after: Vec::new(),
            rc_after: 0.0,
            pr_after: 0.0,
            f3_after: 0.0,
            variants: 0,
            mapped: None,
        }
    }

    #[test]
    fn hits_land_on_the_diagonal_and_misses_where_the_engine_looked_instead() {
        let rows = [
            row(&["ACH(2)"], &["ACH(1)"]),
            row(&["HLR", "HNE"], &["HLR", "OCH"]),
            row(&["HBS"], &[]),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let m = matrix(&refs);
        assert_eq!(m["ACH"]["ACH"], 1, "the type is what the matrix compares");
        assert_eq!(m["HLR"]["HLR"], 1);
        assert_eq!(m["HNE"]["OCH"], 1);
        assert_eq!(m["HBS"][NOTHING], 1);
        let t = table("static", &refs);
        assert_eq!(t.headers.last().unwrap(), NOTHING);
        let hlr = t.rows.iter().find(|r| r[0].text == "HLR").unwrap();
        assert!(hlr.iter().any(|c| c.mark && c.text == "1"));
    }
}
