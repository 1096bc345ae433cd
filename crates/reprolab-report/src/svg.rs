//! Hand-written SVG plots: box plots of distributions per group (the study's Figure 3 style),
//! horizontal bar charts of one value per label (pass rates, counts), and line charts of series
//! over a common x (learning curves, per-layer gradient norms) with ticks at round numbers.

use std::fmt::Write as _;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Quantile with linear interpolation (numpy's default) of sorted values.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A box plot (median, quartiles, whiskers at 1.5 IQR, outliers as dots, mean as a cross) of
/// each group's values; empty groups are drawn as "no data".
pub fn boxplot(title: &str, y_label: &str, groups: &[(String, Vec<f64>)]) -> String {
    boxplot_in(title, y_label, groups, None)
}

/// [`boxplot`] with the y axis limited to `range`: statistics use every value, but what lies
/// outside is drawn on the edge and counted under the group ("3 off-scale"), so that a few
/// extreme values (an IR of −180) do not flatten every box.
pub fn boxplot_in(
    title: &str,
    y_label: &str,
    groups: &[(String, Vec<f64>)],
    range: Option<(f64, f64)>,
) -> String {
    let (w, h) = (120.0 + 90.0 * groups.len().max(1) as f64, 320.0);
    let (left, right, top, bottom) = (60.0, 20.0, 30.0, 60.0);
    let finite: Vec<f64> = groups
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|x| x.is_finite())
        .collect();
    let (mut lo, mut hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if (hi - lo).abs() < 1e-12 {
        (lo, hi) = (lo - 0.5, hi + 0.5);
    }
    if let Some((rlo, rhi)) = range {
        (lo, hi) = (lo.max(rlo), hi.min(rhi));
    }
    let pad = (hi - lo) * 0.05;
    let (lo, hi) = (lo - pad, hi + pad);
    let y = |v: f64| top + (h - top - bottom) * (1.0 - (v.clamp(lo, hi) - lo) / (hi - lo));
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
        w / 2.0,
        esc(title)
    );
    // Axis with ticks at round numbers.
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"#444\"/>",
        h - bottom
    );
    let ticks = nice_ticks(lo, hi, 5);
    let step = ticks.get(1).map_or(1.0, |b| b - ticks[0]);
    for &v in &ticks {
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{y0:.1}\" x2=\"{}\" y2=\"{y0:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left,
            w - right,
            left - 4.0,
            y(v) + 4.0,
            tick_label(v, step),
            y0 = y(v)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">{}</text>",
        h / 2.0,
        h / 2.0,
        esc(y_label)
    );
    for (i, (label, values)) in groups.iter().enumerate() {
        let cx = left + 45.0 + 90.0 * i as f64;
        let _ = writeln!(
            s,
            "<text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            h - bottom + 18.0,
            esc(label)
        );
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let off = v.iter().filter(|x| **x < lo || **x > hi).count();
        let n_text = if off > 0 {
            format!("n={}, {off} off-scale", v.len())
        } else {
            format!("n={}", v.len())
        };
        let _ = writeln!(
            s,
            "<text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\" fill=\"#777\">{n_text}</text>",
            h - bottom + 34.0
        );
        if v.is_empty() {
            let _ = writeln!(
                s,
                "<text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\" fill=\"#999\">no data</text>",
                h / 2.0
            );
            continue;
        }
        let (q1, med, q3) = (quantile(&v, 0.25), quantile(&v, 0.5), quantile(&v, 0.75));
        let iqr = q3 - q1;
        let wlo = v
            .iter()
            .copied()
            .find(|x| *x >= q1 - 1.5 * iqr)
            .unwrap_or(q1);
        let whi = v
            .iter()
            .rev()
            .copied()
            .find(|x| *x <= q3 + 1.5 * iqr)
            .unwrap_or(q3);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{cx}\" y1=\"{:.1}\" x2=\"{cx}\" y2=\"{:.1}\" stroke=\"#333\"/>\n\
             <rect x=\"{:.1}\" y=\"{:.1}\" width=\"50\" height=\"{:.1}\" fill=\"#9cc3e6\" stroke=\"#333\"/>\n\
             <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#c00\" stroke-width=\"2\"/>\n\
             <text x=\"{cx}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\">×</text>",
            y(whi),
            y(wlo),
            cx - 25.0,
            y(q3),
            (y(q1) - y(q3)).max(1.0),
            cx - 25.0,
            y(med),
            cx + 25.0,
            y(med),
            y(mean) + 4.0
        );
        for x in v.iter().filter(|x| **x < wlo || **x > whi) {
            let _ = writeln!(
                s,
                "<circle cx=\"{cx}\" cy=\"{:.1}\" r=\"2.5\" fill=\"none\" stroke=\"#333\"/>",
                y(*x)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A horizontal bar chart: one bar per `(label, value)`, the value written at its end. Bars are
/// horizontal so that long labels (failure categories, task ids) stay readable. The axis runs
/// from 0 to `max` (default: the largest value); negative and non-finite values draw no bar.
pub fn bar_chart(
    title: &str,
    value_label: &str,
    bars: &[(String, f64)],
    max: Option<f64>,
) -> String {
    let label_w = bars
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 60) as f64
        * 7.0
        + 16.0;
    let (plot_w, bar_h, gap, top, bottom) = (360.0, 18.0, 6.0, 30.0, 34.0);
    let w = label_w + plot_w + 70.0;
    let h = top + bottom + (bar_h + gap) * bars.len().max(1) as f64;
    let largest = bars
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let max = max
        .filter(|m| *m > 0.0)
        .unwrap_or(if largest > 0.0 { largest } else { 1.0 });
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
        w / 2.0,
        esc(title)
    );
    let x0 = label_w;
    let axis_y = h - bottom;
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let x = x0 + plot_w * i as f64 / 4.0;
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{axis_y}\" stroke=\"#ddd\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            axis_y + 14.0,
            number(v)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        x0 + plot_w / 2.0,
        axis_y + 29.0,
        esc(value_label)
    );
    for (i, (label, value)) in bars.iter().enumerate() {
        let y = top + (bar_h + gap) * i as f64;
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            x0 - 6.0,
            y + bar_h * 0.75,
            esc(label)
        );
        if !value.is_finite() || *value < 0.0 {
            continue;
        }
        let bw = plot_w * (value / max).min(1.0);
        let _ = writeln!(
            s,
            "<rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{bar_h}\" fill=\"#4c78a8\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x0 + bw + 4.0,
            y + bar_h * 0.75,
            number(*value)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{x0}\" y1=\"{top}\" x2=\"{x0}\" y2=\"{axis_y}\" stroke=\"#444\"/>"
    );
    s.push_str("</svg>\n");
    s
}

/// Ticks at round numbers (1, 2 or 5 times a power of ten) covering `lo..=hi`, about `target` of
/// them.
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    // The round step nearest to the raw one (by ratio).
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .min_by(|a, b| (a / raw).ln().abs().total_cmp(&(b / raw).ln().abs()))
        .unwrap_or(magnitude);
    // Rounded to the step's precision, so that 3 × 0.2 is 0.6 and not 0.6000000000000001.
    let precision = 10f64.powf(-(step.log10().floor()) + 1.0);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last)
        .map(|i| (i as f64 * step * precision).round() / precision)
        .collect()
}

/// A tick label with as many decimals as the step between ticks needs.
fn tick_label(v: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let text = format!("{v:.decimals$}");
    if text.starts_with('-') && text.trim_start_matches(['-', '0', '.']).is_empty() {
        text[1..].to_string() // "-0.0" is 0
    } else {
        text
    }
}

const PALETTE: [&str; 10] = [
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d",
    "#ff9da6", "#bab0ac",
];

/// A line chart of `series` (name, points) over a shared x axis, with a legend; non-finite
/// points (and non-positive ones on a log scale) break a line rather than bend it. `log_y` puts
/// the y axis on a log scale with ticks at powers of ten, for quantities that span decades
/// (gradient norms).
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_y: bool,
) -> String {
    let (w, h) = (660.0, 320.0);
    let (left, right, top, bottom) = (64.0, 150.0, 30.0, 46.0);
    let usable = |(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!log_y || *y > 0.0);
    let points: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|(_, p)| p.iter().copied())
        .filter(usable)
        .collect();
    let bounds = |f: &dyn Fn(&(f64, f64)) -> f64| {
        points
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            })
    };
    let widen = |(lo, hi): (f64, f64)| {
        if !lo.is_finite() {
            (0.0, 1.0)
        } else if hi - lo < 1e-12 {
            (lo - 0.5, hi + 0.5)
        } else {
            (lo, hi)
        }
    };
    let (xlo, xhi) = widen(bounds(&|p| p.0));
    let ty = |v: f64| if log_y { v.log10() } else { v };
    let (ylo, yhi) = widen(bounds(&|p| ty(p.1)));
    let (ylo, yhi) = if log_y {
        (ylo.floor(), yhi.ceil().max(ylo.floor() + 1.0))
    } else {
        let ticks = nice_ticks(ylo, yhi, 5);
        let step = ticks.get(1).map_or(1.0, |b| b - ticks[0]);
        ((ylo / step).floor() * step, (yhi / step).ceil() * step)
    };
    let plot_w = w - left - right;
    let px = |x: f64| left + plot_w * (x - xlo) / (xhi - xlo);
    let py = |v: f64| top + (h - top - bottom) * (1.0 - (ty(v) - ylo) / (yhi - ylo));
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
        left + plot_w / 2.0,
        esc(title)
    );
    let axis_y = h - bottom;
    let y_ticks: Vec<(f64, String)> = if log_y {
        (ylo as i32..=yhi as i32)
            .map(|e| (10f64.powi(e), format!("1e{e}")))
            .collect()
    } else {
        let ticks = nice_ticks(ylo, yhi, 5);
        let step = ticks.get(1).map_or(1.0, |b| b - ticks[0]);
        ticks.iter().map(|&v| (v, tick_label(v, step))).collect()
    };
    for (v, label) in &y_ticks {
        let y = py(*v);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            left + plot_w,
            left - 6.0,
            y + 4.0
        );
    }
    let mut x_ticks = nice_ticks(xlo, xhi, 8);
    // Epochs and steps are whole numbers: no tick between them.
    if points.iter().all(|p| p.0.fract() == 0.0) {
        x_ticks.retain(|v| v.fract() == 0.0);
    }
    let x_step = x_ticks.get(1).map_or(1.0, |b| b - x_ticks[0]).max(1e-9);
    for &v in &x_ticks {
        let x = px(v);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{axis_y}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#444\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            axis_y + 4.0,
            axis_y + 16.0,
            tick_label(v, x_step)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{axis_y}\" x2=\"{:.1}\" y2=\"{axis_y}\" stroke=\"#444\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{axis_y}\" stroke=\"#444\"/>",
        left + plot_w
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text><text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        left + plot_w / 2.0,
        axis_y + 34.0,
        esc(x_label),
        top + (axis_y - top) / 2.0,
        esc(y_label)
    );
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        // Consecutive usable points form one line; an unusable point ends it.
        for run in pts.split(|p| !usable(p)).filter(|r| !r.is_empty()) {
            let coords: Vec<String> = run
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.8\"/>",
                coords.join(" ")
            );
        }
        let ly = top + 16.0 * i as f64;
        let lx = left + plot_w + 12.0;
        let label: String = name.chars().take(20).collect();
        let _ = writeln!(
            s,
            "<line x1=\"{lx}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"3\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            ly + 6.0,
            lx + 16.0,
            ly + 6.0,
            lx + 20.0,
            ly + 10.0,
            esc(&label)
        );
    }
    if points.is_empty() {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#888\">no data</text>",
            left + plot_w / 2.0,
            top + (axis_y - top) / 2.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// One cell of a [`heatmap`]: its value (`None`: no data) and whether it is marked (outlined and
/// bold, e.g. significant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeatCell {
    pub value: Option<f64>,
    pub mark: bool,
}

/// A grid of values, coloured on a diverging scale clamped to `range` (red below zero, green
/// above, white at zero), each cell labelled with its value; marked cells are outlined and bold.
pub fn heatmap(
    title: &str,
    rows: &[String],
    columns: &[String],
    cells: &[Vec<HeatCell>],
    range: (f64, f64),
) -> String {
    let label_w = rows
        .iter()
        .map(|r| r.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 48) as f64
        * 7.0
        + 12.0;
    let (cell_w, cell_h, top) = (74.0, 22.0, 64.0);
    let w = label_w + cell_w * columns.len().max(1) as f64 + 20.0;
    let h = top + cell_h * rows.len().max(1) as f64 + 16.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
        w / 2.0,
        esc(title)
    );
    for (j, c) in columns.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            label_w + cell_w * (j as f64 + 0.5),
            top - 8.0,
            esc(c)
        );
    }
    let (lo, hi) = range;
    let colour = |v: f64| {
        // White at 0, towards red (228,87,86) below and green (84,162,75) above.
        let (t, (r, g, b)) = if v < 0.0 {
            ((v / lo).clamp(0.0, 1.0), (228.0, 87.0, 86.0))
        } else {
            ((v / hi).clamp(0.0, 1.0), (84.0, 162.0, 75.0))
        };
        let mix = |c: f64| (255.0 + (c - 255.0) * t).round() as u8;
        format!("rgb({},{},{})", mix(r), mix(g), mix(b))
    };
    for (i, label) in rows.iter().enumerate() {
        let y = top + cell_h * i as f64;
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + cell_h * 0.7,
            esc(label)
        );
        for (j, cell) in cells.get(i).into_iter().flatten().enumerate() {
            let x = label_w + cell_w * j as f64;
            let (fill, text) = match cell.value {
                Some(v) if v.is_finite() => (colour(v), format!("{v:.2}")),
                _ => ("#f3f3f3".to_string(), "-".to_string()),
            };
            let (stroke, weight) = if cell.mark {
                ("#222", "bold")
            } else {
                ("#fff", "normal")
            };
            let _ = writeln!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"{stroke}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"{weight}\">{text}</text>",
                cell_w - 2.0,
                cell_h - 2.0,
                x + cell_w / 2.0 - 1.0,
                y + cell_h * 0.7
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A value as a short label: integers without decimals, others with two.
fn number(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heatmap_colours_signs_apart_and_outlines_marked_cells() {
        let cell = |v: Option<f64>, mark| HeatCell { value: v, mark };
        let svg = heatmap(
            "IR",
            &["f1".into(), "f2".into()],
            &["random 10x".into(), "guided 10x".into()],
            &[
                vec![cell(Some(1.0), true), cell(Some(-0.5), false)],
                vec![cell(None, false), cell(Some(0.0), false)],
            ],
            (-1.0, 1.0),
        );
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let fills: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter_map(|n| n.attribute("fill"))
            .collect();
        assert_eq!(
            fills,
            [
                "rgb(84,162,75)",
                "rgb(242,171,171)",
                "#f3f3f3",
                "rgb(255,255,255)"
            ]
        );
        assert_eq!(svg.matches("font-weight=\"bold\"").count(), 1);
    }

    #[test]
    fn ticks_fall_on_round_numbers() {
        assert_eq!(nice_ticks(0.0, 1.15, 5), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        let t = nice_ticks(-1.10, 1.15, 5);
        assert_eq!(t, vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
        assert_eq!(
            nice_ticks(1.0, 20.0, 8),
            vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0]
        );
        assert_eq!(tick_label(-0.0, 0.5), "0.0");
        assert_eq!(tick_label(0.6, 0.2), "0.6");
        assert_eq!(
            nice_ticks(0.002, 0.0149, 5),
            vec![0.002, 0.004, 0.006, 0.008, 0.01, 0.012, 0.014]
        );
    }

    #[test]
    fn a_line_chart_draws_each_series_and_breaks_lines_at_missing_points() {
        let series = vec![
            (
                "loss".to_string(),
                vec![(1.0, 2.0), (2.0, 1.0), (3.0, f64::NAN), (4.0, 0.5)],
            ),
            (
                "val_loss".to_string(),
                vec![(1.0, 2.2), (2.0, 1.4), (3.0, 1.2), (4.0, 1.1)],
            ),
        ];
        let svg = line_chart("Loss", "epoch", "loss", &series, false);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let lines = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .count();
        assert_eq!(lines, 3, "loss is broken at its NaN, val_loss is whole");
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(
            texts.contains(&"val_loss") && texts.contains(&"0.5") && texts.contains(&"2.0"),
            "{texts:?}"
        );
        assert!(
            texts.contains(&"3") && !texts.contains(&"3.5"),
            "whole epochs only: {texts:?}"
        );
        let log = line_chart(
            "g",
            "epoch",
            "norm",
            &[("a".into(), vec![(0.0, 1e-4), (1.0, 0.0), (2.0, 10.0)])],
            true,
        );
        let doc = roxmltree::Document::parse(&log).unwrap();
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(
            texts.contains(&"1e-4") && texts.contains(&"1e1"),
            "{texts:?}"
        );
        assert_eq!(
            doc.descendants()
                .filter(|n| n.has_tag_name("polyline"))
                .count(),
            2
        );
        let empty = line_chart("nothing", "x", "y", &[], false);
        assert!(empty.contains("no data"));
    }

    #[test]
    fn bar_chart_draws_one_bar_per_value_scaled_to_max() {
        let svg = bar_chart(
            "pass@1 <by stage>",
            "pass@1",
            &[
                ("training".into(), 0.5),
                ("inference".into(), 1.0),
                ("none".into(), f64::NAN),
            ],
            Some(1.0),
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<rect").count(), 2, "NaN draws no bar");
        assert!(svg.contains("width=\"180.0\""), "0.5 of 360 px: {svg}");
        assert!(svg.contains("width=\"360.0\""));
        assert!(svg.contains("&lt;by stage&gt;"));
        assert!(svg.contains(">0.50</text>") && svg.contains(">1</text>"));
    }

    #[test]
    fn quantiles_match_numpy_linear() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.25), 1.75); // numpy.quantile([1,2,3,4], .25)
        assert_eq!(quantile(&v, 0.5), 2.5);
    }

    #[test]
    fn a_limited_axis_counts_what_is_off_scale() {
        let svg = boxplot_in(
            "t",
            "IR",
            &[("a".into(), vec![-180.0, 0.2, 0.5, 0.9, 1.0])],
            Some((-1.0, 1.5)),
        );
        assert!(svg.contains("1 off-scale"), "{svg}");
        assert!(!svg.contains("-180"), "the axis stops at the range");
    }

    #[test]
    fn boxplot_draws_each_group_and_outliers() {
        let svg = boxplot(
            "t",
            "IR",
            &[
                ("a".into(), vec![0.0, 0.5, 0.5, 0.6, 5.0]),
                ("b".into(), vec![]),
            ],
        );
        assert_eq!(svg.matches("<rect").count(), 1);
        assert_eq!(
            svg.matches("<circle").count(),
            2,
            "0.0 and 5.0 lie beyond 1.5 IQR of [0.5, 0.6]"
        );
        assert!(svg.contains("no data"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}
