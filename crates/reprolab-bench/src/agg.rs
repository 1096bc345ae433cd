//! Aggregates over a benchmark's rows and how the tables print them.

use reprolab_report::{Cell, Section, Table};

/// The mean, `None` for no values.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The median of the finite values (linear interpolation, as numpy), `None` when there is none.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(reprolab_report::svg::quantile(&v, 0.5))
}

/// Two decimals, or "-".
pub fn fmt2(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

/// Three decimals, or "-".
pub fn fmt3(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

/// A table of plain strings (first row: the headers) as a report table without a caption.
pub fn string_table(rows: &[Vec<String>]) -> Table {
    Table {
        caption: String::new(),
        headers: rows[0].clone(),
        rows: rows[1..]
            .iter()
            .map(|r| r.iter().map(|c| Cell::from(c.clone())).collect())
            .collect(),
    }
}

/// A report section of tables.
pub fn section(heading: &str, paragraphs: Vec<String>, tables: Vec<Table>) -> Section {
    Section {
        heading: heading.into(),
        paragraphs,
        tables,
        figures: vec![],
    }
}

/// `k/n (p%)`, or "-" for none.
pub fn pct(k: usize, n: usize) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{k}/{n} ({:.1}%)", 100.0 * k as f64 / n as f64)
    }
}

/// The distinct values of `key` over `items`, in the order they first appear.
pub fn first_seen<T, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<K> {
    let mut out: Vec<K> = Vec::new();
    for it in items {
        let k = key(it);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_skips_non_finite_values_and_interpolates() {
        assert_eq!(median(vec![3.0, f64::NAN, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(vec![f64::INFINITY]), None);
        assert_eq!(median(Vec::new()), None);
        assert_eq!(mean(&[1.0, 2.0]), Some(1.5));
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn numbers_print_with_fixed_decimals_or_a_dash() {
        assert_eq!(fmt2(Some(0.125)), "0.12");
        assert_eq!(fmt3(Some(2.0)), "2.000");
        assert_eq!(fmt2(None), "-");
    }

    #[test]
    fn string_tables_take_the_first_row_as_headers() {
        let t = string_table(&[vec!["a".into(), "b".into()], vec!["1".into(), "2".into()]]);
        assert_eq!(t.headers, ["a", "b"]);
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0][1].text, "2");
        assert_eq!(first_seen(&[3, 1, 3, 2, 1], |x| *x), [3, 1, 2]);
    }
}
