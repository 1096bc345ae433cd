//! Code extraction from a raw model answer, in the order of Deep-Bench's harness: the largest
//! ```` ```python ```` block that parses, then another fenced block that parses (Deep-Bench's
//! takes only untagged ones; this takes any tag), then the raw text if it parses, otherwise
//! `no_code`.
//!
//! "Parses" means Python's own `ast.parse`, answered by the Python helper in one batch for all
//! samples (see [`candidates`] and [`choose`]); this module only finds the candidates and applies
//! the preference order. One refinement over the rule above: when fenced blocks exist but none
//! parses, the largest one is still taken (a ```` ```python ```` one first) and run, so that a
//! model's syntax error is reported as a syntax error, not hidden as `no_code`. Unfenced text
//! that does not parse stays `no_code`: it cannot be told apart from prose.

use serde::{Deserialize, Serialize};

/// Where the extracted code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A block fenced as ```` ```python ```` (or `py`, `python3`).
    PythonBlock,
    /// Another fenced block (no language, or another tag).
    FencedBlock,
    /// The whole answer, which parses as Python.
    RawText,
}

/// A piece of the answer that may be the code.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub code: String,
    pub origin: Origin,
}

/// The result of extraction.
#[derive(Debug, Clone, PartialEq)]
pub enum Extraction {
    Code {
        code: String,
        origin: Origin,
        /// False when a fenced block was taken although it does not parse.
        parses: bool,
    },
    NoCode,
}

const PYTHON_TAGS: &[&str] = &["python", "py", "python3", "py3"];

/// A fence line: up to three spaces, then at least three backticks or tildes.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = rest.chars().take_while(|c| *c == ch).count();
    (n >= 3).then(|| (ch, n, rest[n..].trim()))
}

/// Every fenced block (in order), then the whole text; empty pieces are left out. An unclosed
/// fence runs to the end (a truncated answer).
pub fn candidates(completion: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, bool, Vec<&str>)> = None;
    let push = |lines: &[&str], python: bool, out: &mut Vec<Candidate>| {
        let code = lines.join("\n");
        if !code.trim().is_empty() {
            out.push(Candidate {
                code: format!("{}\n", code.trim_end()),
                origin: if python {
                    Origin::PythonBlock
                } else {
                    Origin::FencedBlock
                },
            });
        }
    };
    for line in completion.lines() {
        match (&mut open, fence(line)) {
            (None, Some((ch, n, info))) => {
                let tag = info
                    .split(|c: char| c.is_whitespace() || c == '{')
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                open = Some((ch, n, PYTHON_TAGS.contains(&tag.as_str()), Vec::new()));
            }
            (Some((ch, n, python, lines)), Some((c2, n2, info)))
                if c2 == *ch && n2 >= *n && info.is_empty() =>
            {
                let (python, lines) = (*python, std::mem::take(lines));
                push(&lines, python, &mut out);
                open = None;
            }
            (Some((_, _, _, lines)), _) => lines.push(line),
            (None, None) => {}
        }
    }
    if let Some((_, _, python, lines)) = open {
        push(&lines, python, &mut out);
    }
    if !completion.trim().is_empty() {
        out.push(Candidate {
            code: format!("{}\n", completion.trim_end()),
            origin: Origin::RawText,
        });
    }
    out
}

/// Apply the preference order; `parses[i]` says whether `cands[i].code` parses.
pub fn choose(cands: &[Candidate], parses: &[bool]) -> Extraction {
    let ok = |i: usize| parses.get(i).copied().unwrap_or(false);
    let largest = |pred: &dyn Fn(usize) -> bool| {
        (0..cands.len())
            .filter(|&i| pred(i))
            .max_by_key(|&i| (cands[i].code.trim().len(), std::cmp::Reverse(i)))
    };
    let is = |i: usize, o: Origin| cands[i].origin == o;
    let fenced = |i: usize| !is(i, Origin::RawText);
    let pick = |i: usize, parses: bool| Extraction::Code {
        code: cands[i].code.clone(),
        origin: cands[i].origin,
        parses,
    };
    if let Some(i) = largest(&|i| is(i, Origin::PythonBlock) && ok(i)) {
        return pick(i, true);
    }
    if let Some(i) = largest(&|i| fenced(i) && ok(i)) {
        return pick(i, true);
    }
    if let Some(i) = largest(&|i| is(i, Origin::RawText) && ok(i)) {
        return pick(i, true);
    }
    if let Some(i) = largest(&|i| is(i, Origin::PythonBlock)).or_else(|| largest(&fenced)) {
        return pick(i, false);
    }
    Extraction::NoCode
}

/// Extract with a local parse check (for tests and callers that have one at hand).
pub fn extract_code(completion: &str, parses: impl Fn(&str) -> bool) -> Extraction {
    let cands = candidates(completion);
    let ok: Vec<bool> = cands.iter().map(|c| parses(&c.code)).collect();
    choose(&cands, &ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `ast.parse` good enough for these tests: code "parses" unless it contains
    /// the marker `SYNTAX_ERROR` or a fence, or is prose (contains "Here").
    fn parses(code: &str) -> bool {
        !code.contains("SYNTAX_ERROR") && !code.contains("```") && !code.contains("Here")
    }

    fn code_of(e: &Extraction) -> (&str, Origin, bool) {
        match e {
            Extraction::Code {
                code,
                origin,
                parses,
            } => (code.as_str(), *origin, *parses),
            Extraction::NoCode => panic!("expected code, got no_code"),
        }
    }

    #[test]
    fn the_largest_parsing_python_block_wins() {
        let answer = "Here is it:\n```python\nx = 1\n```\nand the full one:\n```python\nimport torch\n\ndef f(x):\n    return x\n```\n";
        let e = extract_code(answer, parses);
        assert_eq!(
            code_of(&e),
            (
                "import torch\n\ndef f(x):\n    return x\n",
                Origin::PythonBlock,
                true
            )
        );
    }

    #[test]
    fn a_larger_python_block_that_does_not_parse_loses_to_a_smaller_one_that_does() {
        let answer = "```python\ndef f(x):\n    return x  # long long long SYNTAX_ERROR\n```\n```python\ndef f(x): return x\n```";
        let e = extract_code(answer, parses);
        assert_eq!(code_of(&e).0, "def f(x): return x\n");
    }

    #[test]
    fn other_fenced_blocks_come_next() {
        let answer = "Here:\n```\ndef f(x):\n    return x\n```\n~~~text\nshort\n~~~\n";
        let e = extract_code(answer, parses);
        assert_eq!(
            code_of(&e),
            ("def f(x):\n    return x\n", Origin::FencedBlock, true)
        );
    }

    #[test]
    fn raw_text_that_parses_is_code() {
        let e = extract_code("def f(x):\n    return x\n", parses);
        assert_eq!(
            code_of(&e),
            ("def f(x):\n    return x\n", Origin::RawText, true)
        );
    }

    #[test]
    fn prose_is_no_code() {
        assert_eq!(
            extract_code("Here I cannot help with that.", parses),
            Extraction::NoCode
        );
        assert_eq!(extract_code("   \n", parses), Extraction::NoCode);
        assert_eq!(extract_code("```python\n\n```", parses), Extraction::NoCode);
    }

    #[test]
    fn a_fenced_syntax_error_is_still_run() {
        let answer = "Here:\n```python\ndef f(x:\n    SYNTAX_ERROR\n```\n";
        let e = extract_code(answer, parses);
        assert_eq!(
            code_of(&e),
            ("def f(x:\n    SYNTAX_ERROR\n", Origin::PythonBlock, false)
        );
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end_and_tags_are_case_insensitive() {
        let e = extract_code("Here:\n```Python\ndef f():\n    pass", parses);
        assert_eq!(
            code_of(&e),
            ("def f():\n    pass\n", Origin::PythonBlock, true)
        );
        let e = extract_code("```py\na = 1\n```", parses);
        assert_eq!(code_of(&e).1, Origin::PythonBlock);
    }

    #[test]
    fn nested_shorter_fences_stay_inside_a_longer_one() {
        let answer = "````python\ns = '''\n```\n'''\n````";
        let cands = candidates(answer);
        assert_eq!(cands[0].code, "s = '''\n```\n'''\n");
    }

    #[test]
    fn candidates_list_blocks_then_raw_text() {
        let c = candidates("a\n```python\nx=1\n```\n```\ny=2\n```");
        let origins: Vec<Origin> = c.iter().map(|c| c.origin).collect();
        assert_eq!(
            origins,
            [Origin::PythonBlock, Origin::FencedBlock, Origin::RawText]
        );
    }
}
