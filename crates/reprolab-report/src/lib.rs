//! Reports: the same content rendered as Markdown and as one self-contained HTML page whose
//! figures are inline SVG (no external files, no font libraries; the only script is a few inline
//! lines that make long tables sortable and filterable).

pub mod svg;
pub mod tree;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Tables longer than this are sortable (click a header) and filterable (a text box) in HTML.
const SORTABLE_ROWS: usize = 15;

/// Sorts a `table.sortable` by the clicked column (numerically where both cells read as
/// numbers), again to reverse; hides rows that do not contain the filter's text.
const SORT_SCRIPT: &str = r#"document.querySelectorAll("table.sortable").forEach(function (t) {
  var rows = function () { return Array.prototype.slice.call(t.rows, 1); };
  var filter = document.createElement("input");
  filter.className = "filter";
  filter.placeholder = "filter rows";
  t.parentNode.insertBefore(filter, t);
  filter.addEventListener("input", function () {
    var q = filter.value.toLowerCase();
    rows().forEach(function (r) {
      r.style.display = r.textContent.toLowerCase().indexOf(q) < 0 ? "none" : "";
    });
  });
  Array.prototype.forEach.call(t.rows[0].cells, function (th, i) {
    th.title = "sort";
    th.addEventListener("click", function () {
      var asc = th.getAttribute("data-asc") !== "1";
      th.setAttribute("data-asc", asc ? "1" : "0");
      rows().sort(function (a, b) {
        var x = a.cells[i].textContent, y = b.cells[i].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      }).forEach(function (r) { r.parentNode.appendChild(r); });
    });
  });
});
"#;

/// One table cell; `mark` renders it bold (e.g. a statistically significant result).
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub text: String,
    pub mark: bool,
}

impl Cell {
    pub fn marked(text: impl Into<String>, mark: bool) -> Cell {
        Cell {
            text: text.into(),
            mark,
        }
    }
}

impl<T: Into<String>> From<T> for Cell {
    fn from(t: T) -> Cell {
        Cell {
            text: t.into(),
            mark: false,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub caption: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// A figure: an SVG document and its caption.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File stem used when the SVG is also written on its own.
    pub name: String,
    pub caption: String,
    pub svg: String,
}

#[derive(Debug, Clone, Default)]
pub struct Section {
    pub heading: String,
    pub paragraphs: Vec<String>,
    pub tables: Vec<Table>,
    pub figures: Vec<Figure>,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub title: String,
    pub sections: Vec<Section>,
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Report {
    pub fn to_markdown(&self) -> String {
        let mut out = format!("# {}\n", self.title);
        for s in &self.sections {
            let _ = write!(out, "\n## {}\n", s.heading);
            for p in &s.paragraphs {
                let _ = write!(out, "\n{p}\n");
            }
            for t in &s.tables {
                if !t.caption.is_empty() {
                    let _ = write!(out, "\n**{}**\n", t.caption);
                }
                let _ = write!(
                    out,
                    "\n| {} |\n|{}|\n",
                    t.headers
                        .iter()
                        .map(|h| md_escape(h))
                        .collect::<Vec<_>>()
                        .join(" | "),
                    vec!["---"; t.headers.len()].join("|")
                );
                for row in &t.rows {
                    let cells: Vec<String> = row
                        .iter()
                        .map(|c| {
                            if c.mark && !c.text.is_empty() {
                                format!("**{}**", md_escape(&c.text))
                            } else {
                                md_escape(&c.text)
                            }
                        })
                        .collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
            }
            for f in &s.figures {
                let _ = write!(
                    out,
                    "\n![{}](figures/{}.svg)\n",
                    md_escape(&f.caption),
                    f.name
                );
            }
        }
        out
    }

    pub fn to_html(&self) -> String {
        let mut body = String::new();
        let mut interactive = false;
        for s in &self.sections {
            let _ = writeln!(body, "<h2>{}</h2>", html_escape(&s.heading));
            for p in &s.paragraphs {
                let _ = writeln!(body, "<p>{}</p>", html_escape(p));
            }
            for t in &s.tables {
                // Wide tables scroll sideways rather than wrap their numbers.
                body.push_str("<div class=\"scroll\">");
                if t.rows.len() > SORTABLE_ROWS {
                    interactive = true;
                    body.push_str("<table class=\"sortable\">\n");
                } else {
                    body.push_str("<table>\n");
                }
                if !t.caption.is_empty() {
                    let _ = writeln!(body, "<caption>{}</caption>", html_escape(&t.caption));
                }
                body.push_str("<tr>");
                for h in &t.headers {
                    let _ = write!(body, "<th>{}</th>", html_escape(h));
                }
                body.push_str("</tr>\n");
                for row in &t.rows {
                    body.push_str("<tr>");
                    for c in row {
                        let class = if c.mark { " class=\"mark\"" } else { "" };
                        let _ = write!(body, "<td{class}>{}</td>", html_escape(&c.text));
                    }
                    body.push_str("</tr>\n");
                }
                body.push_str("</table></div>\n");
            }
            for f in &s.figures {
                let _ = writeln!(
                    body,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    f.svg,
                    html_escape(&f.caption)
                );
            }
        }
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n<style>\n\
             body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}\n\
             table{{border-collapse:collapse;margin:1em 0;font-size:14px}}th,td{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\n\
             th{{background:#f3f3f3}}td:first-child,th:first-child{{text-align:left}}td:not(:first-child){{white-space:nowrap}}.scroll{{overflow-x:auto}}td.mark{{font-weight:bold;background:#e8f4e8}}\n\
             caption{{font-weight:bold;text-align:left;padding:4px 0}}figure{{margin:1em 0}}figcaption{{font-size:14px;color:#555}}\n\
             input.filter{{margin:1em 0 0;padding:3px 6px;width:20em}}th{{cursor:default}}table.sortable th{{cursor:pointer}}\n\
             </style></head><body>\n<h1>{title}</h1>\n{body}{script}</body></html>\n",
            title = html_escape(&self.title),
            script = if interactive {
                format!("<script>\n{SORT_SCRIPT}</script>\n")
            } else {
                String::new()
            }
        )
    }

    /// Write `report.md`, `report.html` and `figures/*.svg` into `dir`; returns the HTML path.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let figures = dir.join("figures");
        std::fs::create_dir_all(&figures)?;
        for s in &self.sections {
            for f in &s.figures {
                std::fs::write(figures.join(format!("{}.svg", f.name)), &f.svg)?;
            }
        }
        std::fs::write(dir.join("report.md"), self.to_markdown())?;
        let html = dir.join("report.html");
        std::fs::write(&html, self.to_html())?;
        Ok(html)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_long_tables_are_sortable_and_the_script_parses() {
        let table = |n: usize| Table {
            caption: String::new(),
            headers: vec!["fault".into(), "RC".into()],
            rows: (0..n)
                .map(|i| vec![format!("f{i}").into(), format!("{i}").into()])
                .collect(),
        };
        let short = Report {
            title: "t".into(),
            sections: vec![Section {
                tables: vec![table(3)],
                ..Section::default()
            }],
        };
        assert!(!short.to_html().contains("<script>"));
        let long = Report {
            title: "t".into(),
            sections: vec![Section {
                tables: vec![table(3), table(SORTABLE_ROWS + 1)],
                ..Section::default()
            }],
        };
        let html = long.to_html();
        assert_eq!(html.matches("class=\"sortable\"").count(), 1);
        assert_eq!(html.matches("<script>").count(), 1);
        // The script must at least parse; Node checks it where it is installed.
        let dir = tempfile::tempdir().unwrap();
        let js = dir.path().join("sort.js");
        std::fs::write(&js, SORT_SCRIPT).unwrap();
        match std::process::Command::new("node")
            .arg("--check")
            .arg(&js)
            .output()
        {
            Ok(out) => assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("SKIPPED the syntax check: node is not available ({e})"),
        }
    }

    fn sample() -> Report {
        Report {
            title: "Repair <bench>".into(),
            sections: vec![Section {
                heading: "Table 9".into(),
                paragraphs: vec!["Bold cells are significant.".into()],
                tables: vec![Table {
                    caption: "metric".into(),
                    headers: vec!["fault".into(), "random".into()],
                    rows: vec![vec!["D1".into(), Cell::marked("0.91 | 0.02", true)]],
                }],
                figures: vec![Figure {
                    name: "ir".into(),
                    caption: "IR".into(),
                    svg: svg::boxplot("IR", "IR", &[("random".into(), vec![0.1, 0.5, 0.9])]),
                }],
            }],
        }
    }

    #[test]
    fn markdown_marks_and_escapes() {
        let md = sample().to_markdown();
        assert!(md.contains("| D1 | **0.91 \\| 0.02** |"), "{md}");
        assert!(md.contains("![IR](figures/ir.svg)"));
    }

    #[test]
    fn html_is_self_contained_and_escaped() {
        let html = sample().to_html();
        assert!(html.contains("Repair &lt;bench&gt;"));
        assert!(html.contains("<svg"));
        assert!(html.contains("class=\"mark\""));
        assert!(!html.contains("<script") && !html.contains("src=\"http"));
    }

    #[test]
    fn write_creates_all_files() {
        let d = tempfile::tempdir().unwrap();
        let html = sample().write(d.path()).unwrap();
        assert!(
            html.exists()
                && d.path().join("report.md").exists()
                && d.path().join("figures/ir.svg").exists()
        );
    }
}
