//! Markdown code fences (```lang ... ``` and ~~~), shared by JSON and code extraction.

/// One fenced block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The first word of the info string, lowercased ("" when none).
    pub lang: String,
    /// The lines between the fences, joined with '\n'.
    pub body: String,
    /// False when the text ended before the closing fence (a truncated answer).
    pub closed: bool,
}

/// Every fenced block of `text`, in order. An opening fence is a line starting (after at most
/// three spaces) with three or more backticks or tildes; it closes at a line of at least as many
/// of the same character and nothing else, or at the end of the text.
pub fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some((ch, count, info)) = opening(line) else {
            continue;
        };
        let lang = info
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_start_matches('{')
            .trim_start_matches('.')
            .trim_end_matches('}')
            .to_ascii_lowercase();
        let mut body = Vec::new();
        let mut closed = false;
        for l in lines.by_ref() {
            if is_closing(l, ch, count) {
                closed = true;
                break;
            }
            body.push(l);
        }
        out.push(Fence {
            lang,
            body: body.join("\n"),
            closed,
        });
    }
    out
}

/// `(fence char, length, info string)` when `line` opens a fence.
fn opening(line: &str) -> Option<(char, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let count = rest.chars().take_while(|c| *c == ch).count();
    if count < 3 {
        return None;
    }
    let info = rest[count..].trim();
    // A backtick fence's info string cannot contain backticks (that is inline code).
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((ch, count, info))
}

fn is_closing(line: &str, ch: char, count: usize) -> bool {
    let t = line.trim();
    t.len() >= count && t.chars().all(|c| c == ch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_blocks_with_languages() {
        let t = "intro\n```python\nx = 1\n```\ntext\n~~~\nraw\n~~~\n```{.json}\n{}\n```";
        let f = fences(t);
        assert_eq!(f.len(), 3);
        assert_eq!(
            (f[0].lang.as_str(), f[0].body.as_str()),
            ("python", "x = 1")
        );
        assert_eq!((f[1].lang.as_str(), f[1].body.as_str()), ("", "raw"));
        assert_eq!(f[2].lang, "json");
        assert!(f.iter().all(|b| b.closed));
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let f = fences("```py\ndef f():\n    return 1");
        assert_eq!(f.len(), 1);
        assert!(!f[0].closed);
        assert_eq!(f[0].body, "def f():\n    return 1");
    }

    #[test]
    fn longer_fences_contain_shorter_ones() {
        let f = fences("````md\n```python\nx\n```\n````");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].body, "```python\nx\n```");
    }

    #[test]
    fn inline_code_is_not_a_fence() {
        assert!(fences("use ```x``` here").is_empty());
        assert!(fences("``not``").is_empty());
    }
}
