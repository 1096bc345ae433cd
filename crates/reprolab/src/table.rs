//! Plain-text tables with aligned columns (comfy-table, borderless). On a terminal, a table wider
//! than the terminal wraps its long cells (a suspect's evidence, a failure message) inside their
//! column instead of running off the screen; piped output keeps each row on one line, for grep.

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};

/// Render rows (first row = header): columns padded to their widest cell, two spaces apart.
pub fn render(rows: &[Vec<String>]) -> String {
    render_within(rows, terminal_width())
}

/// [`render`] wrapped to `width` columns (`None`: never wrapped).
pub fn render_within(rows: &[Vec<String>], width: Option<u16>) -> String {
    let Some((header, body)) = rows.split_first() else {
        return String::new();
    };
    let mut t = Table::new();
    t.load_preset(presets::NOTHING);
    match width {
        Some(w) => {
            t.set_content_arrangement(ContentArrangement::Dynamic);
            t.set_width(w);
        }
        None => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    t.set_header(header.clone());
    for row in body {
        t.add_row(row.clone());
    }
    for column in t.column_iter_mut() {
        column.set_padding((0, 2));
        column.set_cell_alignment(CellAlignment::Left);
    }
    let mut out = String::new();
    for line in t.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The terminal's width when stdout is one.
fn terminal_width() -> Option<u16> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    comfy_table::Table::new().width()
}

/// A metric value with 4 decimals, or "-".
pub fn num(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.4}"))
}

/// A p-value as read: four decimals, small ones in scientific notation, and a 0 (a perfect
/// separation underflowing) said as a bound rather than as an exact zero.
pub fn p_value(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(0.0) => "< 1e-300".into(),
        Some(p) if p < 1e-4 => format!("{p:.1e}"),
        Some(p) => format!("{p:.4}"),
    }
}

/// Cohen's d, or "no variance" where it is a difference over a zero spread (every run of each
/// group gave one value).
pub fn effect(d: Option<f64>, no_variance: bool) -> String {
    match d {
        _ if no_variance => "no variance".into(),
        Some(d) if d.is_finite() => format!("{d:.2}"),
        Some(_) => "no variance".into(),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_and_effects_read_as_numbers_or_say_why_not() {
        assert_eq!(p_value(Some(0.0)), "< 1e-300");
        assert_eq!(p_value(Some(3.2e-7)), "3.2e-7");
        assert_eq!(p_value(Some(0.04321)), "0.0432");
        assert_eq!(p_value(None), "-");
        assert_eq!(effect(Some(106.2), true), "no variance");
        assert_eq!(effect(Some(f64::INFINITY), false), "no variance");
        assert_eq!(effect(Some(-1.234), false), "-1.23");
    }

    #[test]
    fn columns_align() {
        let t = render_within(
            &[
                vec!["a".into(), "bb".into()],
                vec!["ccc".into(), "d".into()],
            ],
            None,
        );
        assert_eq!(t, "a    bb\nccc  d\n");
    }

    #[test]
    fn a_long_cell_wraps_inside_its_column_to_the_width() {
        let evidence = "the output layer receives no gradient in 20 of 20 epochs while the loss \
                        oscillates between 0.3 and 2.9, which a large learning rate explains";
        let rows = vec![
            vec!["rank".into(), "suspect".into(), "evidence".into()],
            vec!["1".into(), "HLR".into(), evidence.into()],
        ];
        let wrapped = render_within(&rows, Some(60));
        assert!(wrapped.lines().count() > 2, "{wrapped}");
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 60),
            "{wrapped}"
        );
        assert!(wrapped.contains("HLR") && wrapped.contains("explains"));
        let piped = render_within(&rows, None);
        assert_eq!(
            piped.lines().count(),
            2,
            "one line per row when not wrapping"
        );
    }
}
