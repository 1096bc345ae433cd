//! A paper as the rest of the crate reads it: its title, its authors' surnames and year, its
//! sections and its reference list, from Markdown, plain text or a PDF's text layer.
//!
//! Markdown is the primary format (the bundled papers are Markdown): the title is the first `# `
//! heading, the line right after it may name the authors (`*R. Ashdown, M. Okafor — 2024*`) and
//! `#`/`##`/`###` headings cut sections (not inside ``` fences, where `#` starts a Python
//! comment). Text and PDF text have no markup: the title is the first non-empty line and
//! headings are guessed from short numbered lines (`3 Method`, `3.1. Loss`) and the usual
//! unnumbered section names (`Abstract`, `References`, ...).
//!
//! References are parsed best effort from a section named References or Bibliography: numbered
//! (`1.`, `[1]`) or bulleted items that may wrap lines, each with its authors' surnames, year and
//! title (`Surname, I. and Surname, I. (2024). Title. Venue.`, quoted titles, and
//! `Surname et al., Title, Venue, 2019`). The raw text is always kept beside what was parsed.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// A loaded paper.
#[derive(Debug, Clone, Serialize)]
pub struct Paper {
    pub path: PathBuf,
    pub title: String,
    /// Surnames from the author line under the title (empty when there is none).
    pub authors: Vec<String>,
    pub year: Option<u16>,
    /// The whole text (for a PDF, the extracted text).
    #[serde(skip)]
    pub text: String,
    pub sections: Vec<Section>,
    pub references: Vec<Reference>,
}

/// A heading and the text under it up to the next heading. Level 1 to 3 for Markdown `#`s; 1
/// for a guessed heading; 0 for the text before the first heading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    pub heading: String,
    pub level: u8,
    #[serde(skip)]
    pub body: String,
}

/// One item of the reference list: the raw text and what could be parsed from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reference {
    pub raw: String,
    pub authors: Vec<String>,
    pub year: Option<u16>,
    pub title: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("{}: cannot read the paper", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: unknown paper format; expected a .md, .markdown, .txt or .pdf file", path.display())]
    Format { path: PathBuf },
    #[error("{}: the paper is empty", path.display())]
    Empty { path: PathBuf },
    #[error("{}: not valid UTF-8 text ({detail}); expected Markdown or plain text in UTF-8", path.display())]
    Encoding { path: PathBuf, detail: String },
    #[error("{}: the PDF has no text layer (scanned page images?); run OCR on it first, e.g. `ocrmypdf {} out.pdf`, or give the paper as Markdown or text", path.display(), path.display())]
    NoTextLayer { path: PathBuf },
    #[error("{}: the PDF is encrypted ({detail}); decrypt it first with its password, e.g. `qpdf --password=PASSWORD --decrypt {} out.pdf`", path.display(), path.display())]
    Encrypted { path: PathBuf, detail: String },
    #[error("{}: cannot read the PDF ({detail}); expected a PDF with a text layer", path.display())]
    Pdf { path: PathBuf, detail: String },
}

enum Format {
    Markdown,
    Text,
    Pdf,
}

fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "md" | "markdown" => Some(Format::Markdown),
        "txt" => Some(Format::Text),
        "pdf" => Some(Format::Pdf),
        _ => None,
    }
}

/// Whether `path` has one of the extensions [`Paper::load`] reads.
pub fn is_paper_file(path: &Path) -> bool {
    format_of(path).is_some()
}

impl Paper {
    /// Read a paper: `.md`/`.markdown`, `.txt` or `.pdf` (by its text layer).
    pub fn load(path: &Path) -> Result<Paper, DocumentError> {
        let format = format_of(path).ok_or_else(|| DocumentError::Format {
            path: path.to_path_buf(),
        })?;
        let bytes = std::fs::read(path).map_err(|source| DocumentError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = match format {
            Format::Pdf => pdf_text(path, &bytes)?,
            Format::Markdown | Format::Text => {
                String::from_utf8(bytes).map_err(|e| DocumentError::Encoding {
                    path: path.to_path_buf(),
                    detail: e.utf8_error().to_string(),
                })?
            }
        };
        if text.trim().is_empty() {
            return Err(DocumentError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(match format {
            Format::Markdown => Paper::from_markdown(path, text),
            Format::Text | Format::Pdf => Paper::from_plain(path, text),
        })
    }

    /// A Markdown paper: the first `# ` heading is the title.
    pub fn from_markdown(path: &Path, text: String) -> Paper {
        let sections = markdown_sections(&text);
        Paper::assemble(path, text, sections, |lines| {
            lines
                .iter()
                .position(|l| l.starts_with("# "))
                .or_else(|| lines.iter().position(|l| !l.trim().is_empty()))
        })
    }

    /// A text (or PDF text) paper: the first non-empty line is the title, unless it is
    /// arXiv's margin stamp (`arXiv:2401.00001v2 [cs.LG] 3 Jan 2024`), which PDF text often
    /// starts with.
    pub fn from_plain(path: &Path, text: String) -> Paper {
        let sections = guessed_sections(&text);
        Paper::assemble(path, text, sections, |lines| {
            lines
                .iter()
                .position(|l| !l.trim().is_empty() && !l.trim().starts_with("arXiv:"))
        })
    }

    /// The paper from its text and sections, with `title_line` picking the title's line.
    fn assemble(
        path: &Path,
        text: String,
        sections: Vec<Section>,
        title_line: impl Fn(&[&str]) -> Option<usize>,
    ) -> Paper {
        let lines: Vec<&str> = text.lines().collect();
        let title_at = title_line(&lines);
        let title = title_at
            .map(|i| lines[i].trim().trim_start_matches('#').trim().to_string())
            .unwrap_or_default();
        // The author line is the next non-empty line, when it reads as a list of names.
        let byline = title_at.and_then(|i| lines[i + 1..].iter().find(|l| !l.trim().is_empty()));
        let (authors, year) = byline.map(|l| parse_byline(l)).unwrap_or_default();
        let references = sections
            .iter()
            .filter(|s| is_reference_heading(&s.heading))
            .flat_map(|s| reference_items(&s.body))
            .map(|raw| Reference::parse(&raw))
            .collect();
        Paper {
            path: path.to_path_buf(),
            title,
            authors,
            year,
            text,
            sections,
            references,
        }
    }

    /// The section describing the method (Method, Methods, Methodology, Approach, Proposed
    /// method, ...): a heading that is exactly such a name wins over one that contains it
    /// (`Related methods`); the title's own heading never counts.
    pub fn method_section(&self) -> Option<&Section> {
        let is_method = |w: &str| matches!(w, "method" | "methods" | "methodology" | "approach");
        let candidates = || {
            self.sections
                .iter()
                .filter(|s| s.heading != self.title)
                .map(|s| {
                    let digits = |c: char| c.is_ascii_digit() || c == '.';
                    (s, normalize(s.heading.trim_start_matches(digits)))
                })
        };
        let exact = candidates()
            .find(|(_, h)| is_method(h) || h.strip_prefix("proposed ").is_some_and(is_method));
        exact
            .or_else(|| candidates().find(|(_, h)| h.split(' ').any(is_method)))
            .map(|(s, _)| s)
    }
}

/// The text of a PDF. `pdf-extract` panics on some malformed files instead of failing: such a
/// panic is caught and reported as an unreadable PDF.
fn pdf_text(path: &Path, bytes: &[u8]) -> Result<String, DocumentError> {
    let extracted = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes));
    let text = match extracted {
        Ok(Ok(text)) => text,
        Ok(Err(pdf_extract::OutputError::PdfError(
            e @ (pdf_extract::Error::Decryption(_) | pdf_extract::Error::InvalidPassword),
        ))) => {
            return Err(DocumentError::Encrypted {
                path: path.to_path_buf(),
                detail: e.to_string(),
            });
        }
        Ok(Err(e)) => {
            return Err(DocumentError::Pdf {
                path: path.to_path_buf(),
                detail: e.to_string(),
            });
        }
        Err(_) => {
            return Err(DocumentError::Pdf {
                path: path.to_path_buf(),
                detail: "the text extractor failed on its structure".into(),
            });
        }
    };
    if text.trim().is_empty() {
        return Err(DocumentError::NoTextLayer {
            path: path.to_path_buf(),
        });
    }
    Ok(text)
}

/// Markdown sections: `#`, `##` and `###` headings outside code fences. Text before the first
/// heading is a level-0 section with an empty heading (kept only when not blank).
fn markdown_sections(text: &str) -> Vec<Section> {
    let mut sections = vec![Section {
        heading: String::new(),
        level: 0,
        body: String::new(),
    }];
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        match (!in_fence).then(|| markdown_heading(line)).flatten() {
            Some((level, heading)) => sections.push(Section {
                heading: heading.to_string(),
                level,
                body: String::new(),
            }),
            None => push_line(sections.last_mut().expect("never empty"), line),
        }
    }
    drop_blank_preamble(sections)
}

fn markdown_heading(line: &str) -> Option<(u8, &str)> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    let rest = &line[hashes..];
    ((1..=3).contains(&hashes) && rest.starts_with(' ') && !rest.trim().is_empty())
        .then(|| (hashes as u8, rest.trim()))
}

/// Sections of unmarked text: headings guessed line by line (see [`guessed_heading`]). In the
/// reference list, numbered items look like headings; there only a known section name (an
/// appendix) starts a new section.
fn guessed_sections(text: &str) -> Vec<Section> {
    let mut sections = vec![Section {
        heading: String::new(),
        level: 0,
        body: String::new(),
    }];
    for line in text.lines() {
        let in_references = is_reference_heading(&sections.last().expect("never empty").heading);
        let heading = if in_references {
            known_section_name(line).filter(|h| !is_reference_heading(h))
        } else {
            guessed_heading(line)
        };
        match heading {
            Some(heading) => sections.push(Section {
                heading,
                level: 1,
                body: String::new(),
            }),
            None => push_line(sections.last_mut().expect("never empty"), line),
        }
    }
    drop_blank_preamble(sections)
}

const SECTION_NAMES: &[&str] = &[
    "abstract",
    "introduction",
    "background",
    "related work",
    "method",
    "methods",
    "methodology",
    "approach",
    "experiments",
    "results",
    "discussion",
    "conclusion",
    "conclusions",
    "acknowledgements",
    "acknowledgments",
    "references",
    "bibliography",
    "appendix",
];

/// A heading in unmarked text: a known section name alone on its line (`References`,
/// `Appendix A`), or a short numbered line without sentence punctuation (`3 Method`,
/// `3.1. Blending the labels`).
fn guessed_heading(line: &str) -> Option<String> {
    if let Some(h) = known_section_name(line) {
        return Some(h);
    }
    let line = line.trim();
    let number_end = line.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, rest) = line.split_at(number_end);
    let rest = rest.trim();
    let words = rest.split_whitespace().count();
    let looks_like_heading = !number.is_empty()
        && number.chars().next().is_some_and(|c| c.is_ascii_digit())
        && line[number_end..].starts_with(char::is_whitespace)
        && rest.chars().next().is_some_and(char::is_uppercase)
        && (1..=8).contains(&words)
        && !rest.contains([',', ';', ':', '(', '='])
        && !rest.ends_with('.');
    looks_like_heading.then(|| line.to_string())
}

/// A line that is only a known section name, possibly numbered (`5 References`, `Appendix B`).
fn known_section_name(line: &str) -> Option<String> {
    let line = line.trim();
    let name = normalize(line.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.'));
    let known = SECTION_NAMES.iter().any(|s| {
        name == *s
            || (*s == "appendix" && name.strip_prefix("appendix ").is_some_and(|x| x.len() <= 2))
    });
    known.then(|| line.to_string())
}

fn push_line(section: &mut Section, line: &str) {
    section.body.push_str(line);
    section.body.push('\n');
}

fn drop_blank_preamble(mut sections: Vec<Section>) -> Vec<Section> {
    if sections.len() > 1 && sections[0].body.trim().is_empty() {
        sections.remove(0);
    }
    sections
}

pub(crate) fn is_reference_heading(heading: &str) -> bool {
    let h = normalize(heading.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.'));
    matches!(h.as_str(), "references" | "reference" | "bibliography")
}

/// Lowercase words of `s`, punctuation dropped, joined by single spaces.
pub fn normalize(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The items of a reference list: each starts at a `1.`, `[1]`, `-` or `*` marker and runs
/// until the next marker or a blank line (a wrapped item's later lines join it). A list with
/// no markers at all (a PDF's text often loses them) is read one paragraph per item.
fn reference_items(body: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let mut open = false;
    let mut any_marker = false;
    for line in body.lines() {
        let line = line.trim();
        if line.is_empty() {
            open = false;
        } else if let Some(rest) = strip_item_marker(line) {
            any_marker = true;
            items.push(rest.to_string());
            open = true;
        } else if open {
            let item = items.last_mut().expect("open implies an item");
            item.push(' ');
            item.push_str(line);
        } else if !any_marker {
            items.push(line.to_string());
            open = true;
        }
    }
    items.retain(|i| !i.trim().is_empty());
    items
}

/// The item text after a list marker, or `None` when the line starts no item.
fn strip_item_marker(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
        return Some(rest.trim());
    }
    if let Some(rest) = line.strip_prefix('[') {
        let close = rest.find(']')?;
        let label = &rest[..close];
        let is_label = !label.is_empty()
            && label.len() <= 12
            && label
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '+' | '-' | '_' | '.'));
        return is_label.then(|| rest[close + 1..].trim());
    }
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &line[digits..];
    let rest = rest.strip_prefix('.').or_else(|| rest.strip_prefix(')'))?;
    ((1..=3).contains(&digits) && rest.starts_with(' ')).then(|| rest.trim())
}

impl Reference {
    /// Parse one reference item (see the module's doc for the formats read).
    pub fn parse(raw: &str) -> Reference {
        let raw = raw.trim().to_string();
        let year = find_year(&raw);
        let (authors_part, title) = split_authors_and_title(&raw);
        Reference {
            authors: surnames(authors_part),
            year,
            title: title
                .map(|t| t.trim().trim_end_matches(['.', ',']).trim().to_string())
                .filter(|t| !t.is_empty()),
            raw,
        }
    }
}

/// The authors' part of a reference and its title, by the first format that fits.
fn split_authors_and_title(raw: &str) -> (&str, Option<&str>) {
    // A quoted title: `Ashdown, R., "Title," Venue, 2024.`
    for (open, close) in [('"', '"'), ('“', '”')] {
        if let Some(start) = raw.find(open) {
            let inner = &raw[start + open.len_utf8()..];
            if let Some(end) = inner.find(close) {
                return (&raw[..start], Some(&inner[..end]));
            }
        }
    }
    // `Authors (2024). Title. Venue.` and `Authors (2024) Title. Venue.`
    if let Some((start, end)) = parenthesised_year(raw) {
        let after = raw[end..].trim_start_matches(['.', ',', ':']).trim_start();
        return (&raw[..start], Some(first_sentence(after)));
    }
    // `A. Surname and B. Surname. Title. Venue, 2019.`
    let first = first_sentence(raw);
    if first.len() < raw.len() && looks_like_names(first) {
        let rest = raw[first.len()..].trim_start_matches('.').trim_start();
        return (first, Some(first_sentence(rest)));
    }
    // `Surname et al., Title, Venue, 2019`: the name chunks, then the title.
    let chunks: Vec<&str> = raw.split(", ").collect();
    let names = author_chunks(&chunks);
    if names > 0 && names < chunks.len() {
        let authors_end = chunks[..names].iter().map(|c| c.len() + 2).sum::<usize>() - 2;
        return (&raw[..authors_end], Some(chunks[names]));
    }
    // No format fits: no authors rather than words of a title taken for names.
    ("", None)
}

/// How many of a comma-split reference's leading chunks are names. A capitalised chunk is a
/// name only with a sign of one (initials in it or after it, `et al.`): titles are capitalised
/// too. The authors end at `et al.`.
fn author_chunks(chunks: &[&str]) -> usize {
    let mut n = 0;
    while let Some(c) = chunks.get(n).map(|c| c.trim()) {
        let next_is_initials = chunks.get(n + 1).is_some_and(|x| is_initials(x.trim()));
        let et_al = c.contains("et al");
        let name = is_initials(c)
            || (looks_like_names(c)
                && (et_al || next_is_initials || c.split_whitespace().any(is_initials)));
        if !name {
            break;
        }
        n += 1;
        if et_al {
            break;
        }
    }
    n
}

/// The text up to the first `. ` that ends a sentence (not an initial, `al.` or `et al.`), or
/// all of it.
fn first_sentence(s: &str) -> &str {
    let mut search_from = 0;
    while let Some(i) = s[search_from..].find(". ").map(|i| i + search_from) {
        let word = s[..i]
            .rsplit(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or("");
        let abbreviation = is_initials(&format!("{word}."))
            || matches!(
                word,
                "al" | "Proc" | "Vol" | "vol" | "pp" | "No" | "eds" | "Eds"
            );
        if !abbreviation {
            return &s[..i];
        }
        search_from = i + 2;
    }
    s.trim_end_matches('.')
}

/// `(2024)` or `(2024a)`: its byte range.
fn parenthesised_year(raw: &str) -> Option<(usize, usize)> {
    raw.match_indices('(').find_map(|(start, _)| {
        let close = start + raw[start..].find(')')?;
        let inner = &raw[start + 1..close];
        let digits = inner.trim_end_matches(|c: char| c.is_ascii_lowercase());
        (digits.len() == 4 && plausible_year(digits).is_some()).then_some((start, close + 1))
    })
}

/// A four-digit year from 1900 to 2099: the parenthesised one, else the last one standing alone.
fn find_year(s: &str) -> Option<u16> {
    if let Some((start, end)) = parenthesised_year(s) {
        return plausible_year(
            s[start + 1..end - 1].trim_end_matches(|c: char| c.is_ascii_lowercase()),
        );
    }
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|w| plausible_year(w.trim_end_matches(|c: char| c.is_ascii_lowercase())))
        .next_back()
}

fn plausible_year(w: &str) -> Option<u16> {
    let y: u16 = (w.len() == 4).then(|| w.parse().ok()).flatten()?;
    (1900..2100).contains(&y).then_some(y)
}

/// `R.`, `R.M.`, `R.-M.` or `R`: initials.
fn is_initials(w: &str) -> bool {
    let w = w.trim();
    !w.is_empty()
        && w.len() <= 6
        && w.split_inclusive('.').all(|p| {
            let p = p.trim_start_matches('-');
            let mut c = p.chars();
            matches!((c.next(), c.next(), c.next()), (Some(u), Some('.'), None) | (Some(u), None, None) if u.is_uppercase())
        })
}

const PARTICLES: &[&str] = &[
    "van", "von", "der", "den", "de", "del", "da", "di", "la", "le",
];

/// Whether `s` reads as a list of person names: every name one to four words, each a
/// capitalised word, initials or a particle (`van`, `de`), joined by `,`, `and` or `&`.
fn looks_like_names(s: &str) -> bool {
    let names = split_names(s);
    !names.is_empty()
        && names.iter().all(|n| {
            let words: Vec<&str> = n.split_whitespace().collect();
            (1..=4).contains(&words.len())
                && words.iter().all(|w| {
                    // Affiliation marks (`Ashdown1`, `Tan*`) are not part of the name.
                    let w = w.trim_end_matches(|c: char| c.is_ascii_digit() || "*†‡".contains(c));
                    is_initials(w)
                        || PARTICLES.contains(&w)
                        || (w.chars().next().is_some_and(char::is_uppercase)
                            && w.chars().all(|c| c.is_alphabetic() || "-'’".contains(c)))
                })
        })
}

/// The names in an authors' list, `et al.` dropped: split at `,`, `;`, `&` and ` and `.
fn split_names(s: &str) -> Vec<String> {
    let s = s.replace("et al.", "").replace("et al", "");
    s.split([',', ';', '&'])
        .flat_map(|p| p.split(" and "))
        .map(|p| p.trim().trim_start_matches("and ").trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Surnames in an authors' list: for each name, its last capitalised word that is not
/// initials (so both `R. Ashdown` and `Ashdown, R.` give `Ashdown`). Digits (affiliation
/// marks) are stripped; a part without such a word (a URL, a venue in lowercase) gives none.
pub fn surnames(authors: &str) -> Vec<String> {
    split_names(authors)
        .iter()
        .filter_map(|name| {
            name.split_whitespace()
                .map(|w| w.trim_matches(|c: char| !c.is_alphabetic()))
                .rfind(|w| {
                    w.chars().next().is_some_and(char::is_uppercase)
                        && w.chars().all(|c| c.is_alphabetic() || "-'’".contains(c))
                        && !is_initials(w)
                })
                .map(str::to_string)
        })
        .collect()
}

/// The surnames and year of an author line (`*R. Ashdown, M. Okafor — 2024*`), or nothing when
/// the line does not read as names (an abstract's first line, a heading).
fn parse_byline(line: &str) -> (Vec<String>, Option<u16>) {
    let line = line.trim();
    if line.starts_with('#') || line.len() > 300 {
        return (Vec::new(), None);
    }
    let line = line.trim_matches(['*', '_']).trim();
    // The year, and anything after a dash (a date, a venue), is not part of the names.
    let names_part = line
        .split([':', '—', '–', '|', '('])
        .next()
        .unwrap_or("")
        .split(" - ")
        .next()
        .unwrap_or("");
    let names_part = names_part
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == ',' || c.is_whitespace());
    // A byline needs full names (`R. Ashdown`): one word alone is more likely a heading.
    let full_names = split_names(names_part)
        .iter()
        .all(|n| n.split_whitespace().count() >= 2);
    if !full_names || !looks_like_names(names_part) {
        return (Vec::new(), None);
    }
    (surnames(names_part), find_year(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> Paper {
        Paper::from_markdown(Path::new("p.md"), text.to_string())
    }

    const BLENDED: &str = "# Blended Pairs: Training on Convex Combinations of Examples\n\
*L. Verhoeven, S. Tan — 2024*\n\n## Abstract\nWe blend pairs.\n\n## Method\nMix inputs \
and labels.\n\n```python\n# not a heading\nx = 1\n```\n\n### Loss\nCross-entropy.\n\n\
## References\n1. Ashdown, R. and Okafor, M. (2024). Softened Targets: Calibrating Classifiers \
by Smoothing One-Hot Labels. Workshop on Practical Deep Learning.\n2. Kingma, D. and Ba, J. \
(2015). Adam: A Method for\n   Stochastic Optimization. ICLR.\n";

    #[test]
    fn markdown_title_byline_sections_and_references() {
        let p = md(BLENDED);
        assert_eq!(
            p.title,
            "Blended Pairs: Training on Convex Combinations of Examples"
        );
        assert_eq!(p.authors, vec!["Verhoeven", "Tan"]);
        assert_eq!(p.year, Some(2024));
        let headings: Vec<&str> = p.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(
            headings,
            vec![
                "Blended Pairs: Training on Convex Combinations of Examples",
                "Abstract",
                "Method",
                "Loss",
                "References"
            ]
        );
        assert!(p.sections[2].body.contains("# not a heading"));
        assert_eq!(p.method_section().unwrap().heading, "Method");
        assert_eq!(p.references.len(), 2);
        let r = &p.references[0];
        assert_eq!(r.authors, vec!["Ashdown", "Okafor"]);
        assert_eq!(r.year, Some(2024));
        assert_eq!(
            r.title.as_deref(),
            Some("Softened Targets: Calibrating Classifiers by Smoothing One-Hot Labels")
        );
        // A wrapped item joins its lines.
        assert_eq!(
            p.references[1].title.as_deref(),
            Some("Adam: A Method for Stochastic Optimization")
        );
    }

    #[test]
    fn reference_formats() {
        let r = Reference::parse("Okafor et al., Label Noise in the Wild, NeurIPS, 2019");
        assert_eq!(r.authors, vec!["Okafor"]);
        assert_eq!(r.year, Some(2019));
        assert_eq!(r.title.as_deref(), Some("Label Noise in the Wild"));

        let r = Reference::parse(
            "R. Ashdown and M. Okafor. Softened targets for classifiers. In Proc. ICML, 2024.",
        );
        assert_eq!(r.authors, vec!["Ashdown", "Okafor"]);
        assert_eq!(r.title.as_deref(), Some("Softened targets for classifiers"));
        assert_eq!(r.year, Some(2024));

        let r = Reference::parse("Tan, S., \u{201c}Mixing Pairs,\u{201d} arXiv:2401.00001, 2024.");
        assert_eq!(r.authors, vec!["Tan"]);
        assert_eq!(r.title.as_deref(), Some("Mixing Pairs"));

        let r = Reference::parse("van der Berg, A. (2020a) Deep Things. Journal.");
        assert_eq!(r.authors, vec!["Berg"]);
        assert_eq!(r.year, Some(2020));
        assert_eq!(r.title.as_deref(), Some("Deep Things"));

        // Nothing to parse: the raw text is kept, no word of it taken for a name.
        let r = Reference::parse("The GNOME desktop, http://www.gnome.org");
        assert_eq!((r.title, r.year), (None, None));
        assert!(r.authors.is_empty());
        assert_eq!(r.raw, "The GNOME desktop, http://www.gnome.org");
        assert_eq!(
            surnames("R. Ashdown, http://x.org, and de la Cruz, M."),
            vec!["Ashdown", "Cruz"]
        );
    }

    #[test]
    fn bracketed_and_bulleted_items_and_unmarked_paragraphs() {
        let items = reference_items("[1] A. B. Title one.\n[Tan24] C. Dee.\n  Title two.\n");
        assert_eq!(items, vec!["A. B. Title one.", "C. Dee. Title two."]);
        let items = reference_items("- one\n  more\n\n- two\n");
        assert_eq!(items, vec!["one more", "two"]);
        let items = reference_items("First ref\nwraps\n\nSecond ref\n");
        assert_eq!(items, vec!["First ref wraps", "Second ref"]);
    }

    #[test]
    fn plain_text_headings_are_guessed() {
        let text = "arXiv:2401.00001v2 [cs.LG] 3 Jan 2024\nSoftened Targets\nR. Ashdown, M. Okafor (2024)\n\nAbstract\nWe smooth.\n\n\
1 Introduction\nLabels are hard.\n2. Method\nWe mix 10% uniform.\n3 We used 5 seeds, \
always.\nReferences\n1. Szegedy, C. (2016). Rethinking the Inception Architecture. CVPR.\n\
2. Short, L. (2019). A Title. Venue.\n";
        let p = Paper::from_plain(Path::new("p.txt"), text.into());
        assert_eq!(p.title, "Softened Targets");
        assert_eq!(p.authors, vec!["Ashdown", "Okafor"]);
        assert_eq!(p.year, Some(2024));
        let headings: Vec<&str> = p.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(
            headings,
            vec!["", "Abstract", "1 Introduction", "2. Method", "References"]
        );
        assert_eq!(p.method_section().unwrap().heading, "2. Method");
        assert_eq!(p.references.len(), 2);
        assert_eq!(
            p.references[0].title.as_deref(),
            Some("Rethinking the Inception Architecture")
        );
    }

    #[test]
    fn a_line_that_is_not_names_is_no_byline() {
        assert_eq!(parse_byline("Abstract"), (vec![], None));
        assert_eq!(
            parse_byline("We study how labels are smoothed, in 2024."),
            (vec![], None)
        );
        assert_eq!(
            parse_byline("_A. van der Berg & B. Smith - NeurIPS 2021_"),
            (vec!["Berg".to_string(), "Smith".to_string()], Some(2021))
        );
    }

    #[test]
    fn unknown_empty_and_unreadable_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let docx = dir.path().join("paper.docx");
        std::fs::write(&docx, "x").unwrap();
        let e = Paper::load(&docx).unwrap_err().to_string();
        assert!(e.contains("paper.docx: unknown paper format"), "{e}");
        let empty = dir.path().join("empty.md");
        std::fs::write(&empty, "  \n").unwrap();
        assert!(
            Paper::load(&empty)
                .unwrap_err()
                .to_string()
                .contains("empty.md: the paper is empty")
        );
        let missing = dir.path().join("missing.md");
        let e = Paper::load(&missing).unwrap_err();
        assert!(
            e.to_string().ends_with("missing.md: cannot read the paper"),
            "{e}"
        );
    }

    /// A one-page PDF whose content stream is `content`, with correct xref offsets.
    fn pdf(content: &str) -> Vec<u8> {
        pdf_with(content, "")
    }

    /// [`pdf`] with `trailer` added to its trailer dictionary, and an encryption dictionary as
    /// object 6 (used when `trailer` refers to it).
    fn pdf_with(content: &str, trailer: &str) -> Vec<u8> {
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
             /Resources << /Font << /F1 5 0 R >> >> >>"
                .to_string(),
            format!(
                "<< /Length {} >>\nstream\n{content}\nendstream",
                content.len()
            ),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
            format!(
                "<< /Filter /Standard /V 1 /R 2 /P -4 /O <{o}> /U <{o}> >>",
                o = "ab".repeat(32)
            ),
        ];
        let mut out = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend(format!("{} 0 obj\n{body}\nendobj\n", i + 1).bytes());
        }
        let xref = out.len();
        out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
        for o in offsets {
            out.extend(format!("{o:010} 00000 n \n").bytes());
        }
        out.extend(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R {trailer} >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .bytes(),
        );
        out
    }

    #[test]
    fn pdf_text_is_extracted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paper.pdf");
        let content = "BT /F1 12 Tf 72 720 Td (Softened Targets) Tj 0 -20 Td \
                       (R. Ashdown, M. Okafor 2024) Tj ET";
        std::fs::write(&path, pdf(content)).unwrap();
        let p = Paper::load(&path).unwrap();
        assert_eq!(p.title, "Softened Targets");
        assert_eq!(p.authors, vec!["Ashdown", "Okafor"]);
    }

    #[test]
    fn pdfs_without_text_encrypted_or_broken_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scan.pdf");
        // A page that only paints a rectangle: what a scan looks like without its image.
        std::fs::write(&path, pdf("0 0 1 rg 10 10 100 100 re f")).unwrap();
        let e = Paper::load(&path).unwrap_err().to_string();
        assert!(e.contains("scan.pdf: the PDF has no text layer"), "{e}");
        assert!(e.contains("ocrmypdf"), "{e}");

        // Encrypted with a password that is not the empty one.
        let id = format!("<{0}> <{0}>", "01".repeat(16));
        let trailer = format!("/Encrypt 6 0 R /ID [{id}]");
        std::fs::write(&path, pdf_with("BT /F1 12 Tf (Secret) Tj ET", &trailer)).unwrap();
        let e = Paper::load(&path).unwrap_err().to_string();
        assert!(e.contains("scan.pdf: the PDF is encrypted"), "{e}");

        std::fs::write(&path, b"%PDF-1.4\nnot really a pdf").unwrap();
        let e = Paper::load(&path).unwrap_err().to_string();
        assert!(e.contains("scan.pdf: cannot read the PDF"), "{e}");
    }
}
