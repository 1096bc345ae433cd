//! Targeted edits as SEARCH/REPLACE blocks (Aider's format, which models follow far better
//! than line-numbered diffs or code escaped inside JSON):
//!
//! ```text
//! model.py
//! <<<<<<< SEARCH
//! old lines
//! =======
//! new lines
//! >>>>>>> REPLACE
//! ```
//!
//! An empty SEARCH creates the file (or appends to it). A block applies where its SEARCH text
//! occurs exactly once; failing that, where it occurs once with each line's surrounding
//! whitespace ignored (models often re-indent). A block that matches nowhere or more than once
//! fails and is reported, so the model can be asked for that block again.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub path: String,
    pub search: String,
    pub replace: String,
}

/// The blocks of an answer, in order. The file path is the last non-empty line before
/// `<<<<<<< SEARCH` (fence markers and backticks stripped).
pub fn parse(answer: &str) -> Vec<Block> {
    let lines: Vec<&str> = answer.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !is_marker(lines[i], "<<<<<<<") {
            i += 1;
            continue;
        }
        let path = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.starts_with("```"))
            .unwrap_or("")
            .trim_matches(|c| c == '`' || c == '*' || c == ':')
            .trim()
            .to_string();
        let Some(mid) = (i + 1..lines.len()).find(|&j| is_marker(lines[j], "=======")) else {
            break;
        };
        let Some(end) = (mid + 1..lines.len()).find(|&j| is_marker(lines[j], ">>>>>>>")) else {
            break;
        };
        out.push(Block {
            path,
            search: join(&lines[i + 1..mid]),
            replace: join(&lines[mid + 1..end]),
        });
        i = end + 1;
    }
    out
}

fn is_marker(line: &str, marker: &str) -> bool {
    let t = line.trim();
    t.starts_with(marker)
        && t[marker.len()..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == ' ')
}

fn join(lines: &[&str]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        lines.join("\n") + "\n"
    }
}

/// A block that could not be applied, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub block: Block,
    pub why: String,
}

/// Apply `blocks` to `files` (path → text), in order; returns the blocks that failed.
pub fn apply(files: &mut BTreeMap<String, String>, blocks: &[Block]) -> Vec<Failed> {
    let mut failed = Vec::new();
    for b in blocks {
        let fail = |why: &str| Failed {
            block: b.clone(),
            why: why.to_string(),
        };
        if b.path.is_empty() || b.path.starts_with('/') || b.path.split('/').any(|p| p == "..") {
            failed.push(fail("the block names no file inside the project"));
            continue;
        }
        if b.search.trim().is_empty() {
            files
                .entry(b.path.clone())
                .or_default()
                .push_str(&b.replace);
            continue;
        }
        let Some(text) = files.get_mut(&b.path) else {
            failed.push(fail("there is no such file"));
            continue;
        };
        match replace_once(text, &b.search, &b.replace) {
            Ok(new) => *text = new,
            Err(why) => failed.push(fail(why)),
        }
    }
    failed
}

fn replace_once(text: &str, search: &str, replace: &str) -> Result<String, &'static str> {
    match text.matches(search).count() {
        1 => return Ok(text.replacen(search, replace, 1)),
        n if n > 1 => return Err("the SEARCH text occurs more than once; give more lines"),
        _ => {}
    }
    // Whitespace-tolerant: compare trimmed lines, replace the whole matched lines.
    let lines: Vec<&str> = text.lines().collect();
    let want: Vec<&str> = search.lines().map(str::trim).collect();
    let starts: Vec<usize> = (0..lines.len().saturating_sub(want.len() - 1))
        .filter(|&s| {
            lines[s..s + want.len()]
                .iter()
                .zip(&want)
                .all(|(a, b)| a.trim() == *b)
        })
        .collect();
    match starts.as_slice() {
        [s] => {
            let mut out: Vec<String> = lines[..*s].iter().map(|l| l.to_string()).collect();
            out.extend(replace.lines().map(str::to_string));
            out.extend(lines[s + want.len()..].iter().map(|l| l.to_string()));
            Ok(out.join("\n") + "\n")
        }
        [] => Err("the SEARCH text is not in the file"),
        _ => Err("the SEARCH text occurs more than once; give more lines"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = "Plan: fix eps.\n\nloss.py\n```python\n<<<<<<< SEARCH\nEPS = 0.2\n=======\nEPS = 0.1\n>>>>>>> REPLACE\n```\n\n`new.py`\n<<<<<<< SEARCH\n=======\nprint('hi')\n>>>>>>> REPLACE\n";

    #[test]
    fn blocks_are_parsed_with_their_file() {
        let blocks = parse(ANSWER);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].path, "loss.py");
        assert_eq!(blocks[0].search, "EPS = 0.2\n");
        assert_eq!(blocks[0].replace, "EPS = 0.1\n");
        assert_eq!(blocks[1].path, "new.py");
        assert_eq!(blocks[1].search, "");
    }

    #[test]
    fn blocks_apply_exactly_then_ignoring_indentation_and_failures_say_why() {
        let mut files = BTreeMap::from([(
            "loss.py".to_string(),
            "import torch\nEPS = 0.2\ndef f():\n    return EPS\n".to_string(),
        )]);
        let mut blocks = parse(ANSWER);
        blocks.push(Block {
            path: "loss.py".into(),
            search: "def f():\n  return EPS\n".into(),
            replace: "def f():\n    return 2 * EPS\n".into(),
        });
        blocks.push(Block {
            path: "loss.py".into(),
            search: "nothing like this\n".into(),
            replace: "x\n".into(),
        });
        blocks.push(Block {
            path: "../etc/passwd".into(),
            search: String::new(),
            replace: "x\n".into(),
        });
        let failed = apply(&mut files, &blocks);
        assert_eq!(
            files["loss.py"],
            "import torch\nEPS = 0.1\ndef f():\n    return 2 * EPS\n"
        );
        assert_eq!(files["new.py"], "print('hi')\n");
        assert_eq!(failed.len(), 2);
        assert!(failed[0].why.contains("not in the file"));
        assert!(failed[1].why.contains("inside the project"));
    }

    #[test]
    fn an_ambiguous_search_is_refused() {
        let mut files = BTreeMap::from([("a.py".to_string(), "x = 1\nx = 1\n".to_string())]);
        let failed = apply(
            &mut files,
            &[Block {
                path: "a.py".into(),
                search: "x = 1\n".into(),
                replace: "x = 2\n".into(),
            }],
        );
        assert!(failed[0].why.contains("more than once"));
        assert_eq!(files["a.py"], "x = 1\nx = 1\n");
    }
}
