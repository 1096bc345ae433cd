//! Program code out of an LLM answer. Answers mix explanation, examples and the program; the
//! program is usually the largest Python block that is syntactically valid. Syntax checking is
//! the caller's (`parses`, e.g. Python's `ast.parse` through the executor), so this crate stays
//! free of any Python dependency.

use serde::Serialize;

use super::fence::{Fence, fences};

/// Where the extracted code came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeSource {
    /// The largest ```python / ```py block that parses.
    LargestPython,
    /// A fenced block of another or no language (the largest that parses; when none parses, the
    /// largest block, Python-tagged first, so that a syntax error is reported as such).
    Fenced,
    /// The whole answer, which parses as code.
    Raw,
    /// Nothing that looks like code.
    NoCode,
}

/// Result of [`extract_code`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeExtraction {
    pub code: Option<String>,
    pub how: CodeSource,
}

const PYTHON_TAGS: &[&str] = &["python", "py", "python3", "py3"];

/// The program in `text`; `parses` says whether a candidate is valid code.
pub fn extract_code(text: &str, parses: &dyn Fn(&str) -> bool) -> CodeExtraction {
    let blocks: Vec<Fence> = fences(text)
        .into_iter()
        .filter(|f| !f.body.trim().is_empty())
        .collect();
    let is_python = |f: &Fence| PYTHON_TAGS.contains(&f.lang.as_str());
    let largest = |pred: &dyn Fn(&Fence) -> bool| -> Option<String> {
        blocks
            .iter()
            .filter(|f| pred(f))
            // Ties go to the earlier block.
            .fold(None::<&Fence>, |best, f| match best {
                Some(b) if b.body.len() >= f.body.len() => Some(b),
                _ => Some(f),
            })
            .map(|f| f.body.clone())
    };
    if let Some(code) = largest(&|f| is_python(f) && parses(&f.body)) {
        return found(code, CodeSource::LargestPython);
    }
    if !blocks.is_empty() {
        let code = largest(&|f| parses(&f.body))
            .or_else(|| largest(&is_python))
            .or_else(|| largest(&|_| true))
            .expect("blocks is not empty");
        return found(code, CodeSource::Fenced);
    }
    let raw = text.trim();
    if !raw.is_empty() && parses(raw) {
        return found(raw.to_string(), CodeSource::Raw);
    }
    CodeExtraction {
        code: None,
        how: CodeSource::NoCode,
    }
}

fn found(code: String, how: CodeSource) -> CodeExtraction {
    CodeExtraction {
        code: Some(code),
        how,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in syntax check: balanced parentheses and no line starting with "Sure".
    fn parses(code: &str) -> bool {
        code.matches('(').count() == code.matches(')').count()
            && !code.lines().any(|l| l.starts_with("Sure"))
    }

    #[test]
    fn largest_valid_python_block_wins() {
        let t = "Example:\n```python\nx = f(1)\n```\nFull program:\n```python\nimport torch\nmodel = build()\ntrain(model)\n```\nBroken:\n```python\nprint((((( this is long but invalid ((((((((((\n```";
        let e = extract_code(t, &parses);
        assert_eq!(e.how, CodeSource::LargestPython);
        assert_eq!(
            e.code.unwrap(),
            "import torch\nmodel = build()\ntrain(model)"
        );
    }

    #[test]
    fn other_fences_when_no_python_block_parses() {
        let t = "```\nrun(1)\n```\n```bash\npip install torch\n```";
        let e = extract_code(t, &parses);
        assert_eq!(e.how, CodeSource::Fenced);
        assert_eq!(e.code.unwrap(), "pip install torch");
    }

    #[test]
    fn invalid_python_is_still_returned_as_fenced() {
        // The caller must see the syntax error, not "no code".
        let t = "```python\ndef f(:\n```";
        let e = extract_code(t, &parses);
        assert_eq!(e.how, CodeSource::Fenced);
        assert_eq!(e.code.unwrap(), "def f(:");
    }

    #[test]
    fn truncated_fence_is_code() {
        let e = extract_code("Here:\n```python\nimport os\nprint(os.getcwd())", &parses);
        assert_eq!(e.how, CodeSource::LargestPython);
        assert_eq!(e.code.unwrap(), "import os\nprint(os.getcwd())");
    }

    #[test]
    fn raw_answer_that_parses() {
        let e = extract_code("import torch\nprint(torch.ones(2))\n", &parses);
        assert_eq!(e.how, CodeSource::Raw);
        assert_eq!(e.code.unwrap(), "import torch\nprint(torch.ones(2))");
    }

    #[test]
    fn prose_only_is_no_code() {
        let e = extract_code("Sure, I can help (with that.", &parses);
        assert_eq!(
            e,
            CodeExtraction {
                code: None,
                how: CodeSource::NoCode
            }
        );
        let e = extract_code("", &parses);
        assert_eq!(e.how, CodeSource::NoCode);
    }

    #[test]
    fn py_tag_and_empty_blocks() {
        let e = extract_code("```py\n```\n```py\na = 1\n```", &parses);
        assert_eq!(e.how, CodeSource::LargestPython);
        assert_eq!(e.code.unwrap(), "a = 1");
    }
}
