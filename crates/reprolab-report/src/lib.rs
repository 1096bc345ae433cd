//! Reports: the same content rendered as Markdown and as one self-contained HTML page whose
//! figures are inline SVG (no scripts, no external files, no font libraries).

pub mod svg;
pub mod tree;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
        for s in &self.sections {
            let _ = writeln!(body, "<h2>{}</h2>", html_escape(&s.heading));
            for p in &s.paragraphs {
                let _ = writeln!(body, "<p>{}</p>", html_escape(p));
            }
            for t in &s.tables {
                body.push_str("<table>\n");
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
                body.push_str("</table>\n");
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
             th{{background:#f3f3f3}}td:first-child,th:first-child{{text-align:left}}td.mark{{font-weight:bold;background:#e8f4e8}}\n\
             caption{{font-weight:bold;text-align:left;padding:4px 0}}figure{{margin:1em 0}}figcaption{{font-size:14px;color:#555}}\n\
             </style></head><body>\n<h1>{title}</h1>\n{body}</body></html>\n",
            title = html_escape(&self.title)
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
