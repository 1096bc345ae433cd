//! JSON out of an LLM answer. Models wrap JSON in fences or prose and write it the way Python or
//! JavaScript would (single quotes, trailing commas, `True`, comments, bare keys). This module
//! finds candidate spans and parses each strictly first, then after a conservative repair.

use serde_json::Value;

use super::fence::fences;

/// Why no JSON could be taken from an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("the answer is empty; expected JSON")]
    Empty,
    #[error("no JSON object or array in the answer ({chars} characters): {excerpt}")]
    NoJson { chars: usize, excerpt: String },
    #[error(
        "the answer has JSON-like text that does not parse, even after repair ({detail}): {excerpt}"
    )]
    Invalid { detail: String, excerpt: String },
}

/// Most bracketed spans tried per text, so a huge answer costs bounded time.
const MAX_SPANS: usize = 64;

/// The first JSON value in `text`. Candidates, in order: ```json fences, other fences, balanced
/// `{...}` / `[...]` spans in the prose, and the whole text. Each is parsed as is, then after
/// [`repair`]. Fences and the whole text may hold any JSON value; prose spans only objects and
/// arrays.
pub fn extract_json(text: &str) -> Result<Value, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let mut first_error: Option<(String, String)> = None;
    let mut try_parse = |candidate: &str| -> Option<Value> {
        let candidate = candidate.trim();
        if candidate.is_empty() {
            return None;
        }
        match serde_json::from_str::<Value>(candidate) {
            Ok(v) => return Some(v),
            Err(e) => {
                if let Ok(v) = serde_json::from_str::<Value>(&repair(candidate)) {
                    return Some(v);
                }
                first_error.get_or_insert_with(|| (e.to_string(), super::excerpt(candidate)));
            }
        }
        None
    };

    let blocks = fences(text);
    let (json_blocks, other_blocks): (Vec<_>, Vec<_>) = blocks.iter().partition(|f| {
        matches!(
            f.lang.as_str(),
            "json" | "json5" | "jsonc" | "javascript" | "js"
        )
    });
    for f in json_blocks.iter().chain(other_blocks.iter()) {
        if let Some(v) = try_parse(&f.body) {
            return Ok(v);
        }
        // A fence may hold prose around the JSON as well.
        if let Some(v) = balanced_spans(&f.body).find_map(&mut try_parse) {
            return Ok(v);
        }
    }
    for span in balanced_spans(text) {
        if let Some(v) = try_parse(span) {
            return Ok(v);
        }
    }
    // The whole answer may be a bare value (`42`, `"yes"`); prose failing here is not "invalid
    // JSON", so its parse error is not reported.
    let whole = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(whole) {
        return Ok(v);
    }
    Err(match first_error {
        Some((detail, excerpt)) => ParseError::Invalid { detail, excerpt },
        None => ParseError::NoJson {
            chars: text.chars().count(),
            excerpt: super::excerpt(text),
        },
    })
}

/// Spans of `text` that start at `{` or `[` and end at the matching bracket, in order of their
/// start (outer spans before the spans nested in them), at most [`MAX_SPANS`]. One pass over the
/// text; inside brackets, strings in double quotes (and single quotes where a value or key can
/// start, so that apostrophes in prose do not count) are skipped.
pub fn balanced_spans(text: &str) -> impl Iterator<Item = &str> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut stack: Vec<(char, usize)> = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut last_sig: Option<char> = None;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
                last_sig = Some(c);
            }
            continue;
        }
        match c {
            '"' if !stack.is_empty() => quote = Some('"'),
            '\'' if !stack.is_empty() && last_sig.is_some_and(|p| "{[,:".contains(p)) => {
                quote = Some('\'')
            }
            '{' => stack.push(('}', i)),
            '[' => stack.push((']', i)),
            '}' | ']' => match stack.last() {
                Some(&(close, start)) if close == c => {
                    stack.pop();
                    spans.push((start, i + 1));
                }
                // A stray closing bracket: whatever was open is not JSON.
                _ => stack.clear(),
            },
            _ => {}
        }
        if !c.is_whitespace() {
            last_sig = Some(c);
        }
    }
    spans.sort_by_key(|&(start, _)| start);
    spans
        .into_iter()
        .take(MAX_SPANS)
        .map(move |(s, e)| &text[s..e])
}

/// A best-effort rewrite of JavaScript / Python-flavoured JSON into JSON: single-quoted and
/// curly-quoted strings become double-quoted, raw control characters in strings are escaped,
/// `//` and `/* */` comments are dropped, trailing commas before `}` / `]` are dropped,
/// `True` / `False` / `None` become `true` / `false` / `null`, and bare keys (`{lr: 0.1}`) are
/// quoted. Text inside strings is never changed otherwise.
pub fn repair(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 16);
    let mut last_sig: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' | '\u{201c}' | '\u{2018}' => {
                let close = match c {
                    '\u{201c}' => '\u{201d}',
                    '\u{2018}' => '\u{2019}',
                    q => q,
                };
                i = copy_string(&chars, i + 1, close, &mut out);
                last_sig = Some('"');
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'/') || chars.get(i + 1) == Some(&'*') => {
                i = skip_comment(&chars, i);
                continue;
            }
            ',' => {
                let next = skip_insignificant(&chars, i + 1);
                if matches!(chars.get(next), Some('}') | Some(']') | None) {
                    i += 1;
                    continue;
                }
                out.push(',');
            }
            c if c.is_alphabetic() || c == '_' || c == '$' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '$' | '-'))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let after = skip_insignificant(&chars, i);
                let is_key =
                    chars.get(after) == Some(&':') && matches!(last_sig, Some('{') | Some(','));
                match word.as_str() {
                    _ if is_key => {
                        out.push('"');
                        out.push_str(&word);
                        out.push('"');
                    }
                    "True" => out.push_str("true"),
                    "False" => out.push_str("false"),
                    "None" => out.push_str("null"),
                    _ => out.push_str(&word),
                }
                last_sig = word.chars().last();
                continue;
            }
            c => out.push(c),
        }
        if !c.is_whitespace() {
            last_sig = Some(c);
        }
        i += 1;
    }
    out
}

/// Copies a string body starting at `i` up to its closing quote `close` into `out` as a JSON
/// string (with its quotes); returns the index after the closing quote.
fn copy_string(chars: &[char], mut i: usize, close: char, out: &mut String) -> usize {
    out.push('"');
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            match chars.get(i + 1) {
                Some('\'') => out.push('\''),
                Some(&n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push_str("\\\\"),
            }
            i += 2;
            continue;
        }
        if c == close {
            out.push('"');
            return i + 1;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    out.push('"');
    i
}

/// The index after a `//` or `/* */` comment starting at `i`.
fn skip_comment(chars: &[char], i: usize) -> usize {
    if chars.get(i + 1) == Some(&'/') {
        let mut j = i + 2;
        while j < chars.len() && chars[j] != '\n' {
            j += 1;
        }
        j
    } else {
        let mut j = i + 2;
        while j + 1 < chars.len() && !(chars[j] == '*' && chars[j + 1] == '/') {
            j += 1;
        }
        (j + 2).min(chars.len())
    }
}

/// The index of the next character that is neither whitespace nor in a comment.
fn skip_insignificant(chars: &[char], mut i: usize) -> usize {
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if chars.get(i) == Some(&'/') && matches!(chars.get(i + 1), Some('/') | Some('*')) {
            i = skip_comment(chars, i);
        } else {
            return i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(text: &str) -> Value {
        extract_json(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn plain_json() {
        assert_eq!(ok(r#"{"a": 1}"#), json!({"a": 1}));
        assert_eq!(ok("[1, 2]"), json!([1, 2]));
        assert_eq!(ok("  42 "), json!(42));
    }

    #[test]
    fn json_fence_wins_over_other_fences_and_prose() {
        let t = "Config {not json}.\n```python\nprint({'x': 1})\n```\n```json\n{\"lr\": 0.01}\n```";
        assert_eq!(ok(t), json!({"lr": 0.01}));
    }

    #[test]
    fn any_fence_then_prose() {
        assert_eq!(ok("```\n{\"a\": [1]}\n```"), json!({"a": [1]}));
        assert_eq!(
            ok("Sure! Here is the patch: {\"lr\": 0.001, \"batch_size\": 32}. Hope it helps."),
            json!({"lr": 0.001, "batch_size": 32})
        );
        assert_eq!(
            ok("The list is [\"a\", \"b\"] as asked."),
            json!(["a", "b"])
        );
    }

    #[test]
    fn skips_brace_spans_that_are_not_json() {
        let t = "Use {the learning rate} wisely. Answer: {\"lr\": 0.1}";
        assert_eq!(ok(t), json!({"lr": 0.1}));
        let t = "f(x) = {x | x > 0} and {'a': 'don\\'t'}";
        assert_eq!(ok(t), json!({"a": "don't"}));
    }

    #[test]
    fn repairs_trailing_commas() {
        assert_eq!(
            ok("{\"a\": [1, 2,], \"b\": 3,}"),
            json!({"a": [1, 2], "b": 3})
        );
        assert_eq!(ok("{\"a\": 1, // last\n}"), json!({"a": 1}));
    }

    #[test]
    fn repairs_single_quotes() {
        assert_eq!(
            ok("{'optimizer': 'adam', 'note': 'say \"hi\"', 'it': 'it\\'s'}"),
            json!({"optimizer": "adam", "note": "say \"hi\"", "it": "it's"})
        );
    }

    #[test]
    fn repairs_python_literals_but_not_inside_strings() {
        assert_eq!(
            ok("{'a': True, 'b': False, 'c': None, 'd': 'True None'}"),
            json!({"a": true, "b": false, "c": null, "d": "True None"})
        );
    }

    #[test]
    fn repairs_comments_and_bare_keys() {
        let t = "{\n  // the rate\n  lr: 0.01, /* block */ batch_size: 32,\n  opt_name: \"sgd\"\n}";
        assert_eq!(
            ok(t),
            json!({"lr": 0.01, "batch_size": 32, "opt_name": "sgd"})
        );
    }

    #[test]
    fn repairs_raw_newlines_and_curly_quotes() {
        assert_eq!(
            ok("{\"code\": \"line1\nline2\"}"),
            json!({"code": "line1\nline2"})
        );
        assert_eq!(
            ok("{\u{201c}a\u{201d}: \u{201c}b\u{201d}}"),
            json!({"a": "b"})
        );
    }

    #[test]
    fn urls_in_strings_are_not_comments() {
        assert_eq!(
            ok("{'url': 'http://x.org/a', \"b\": \"//no\"}"),
            json!({"url": "http://x.org/a", "b": "//no"})
        );
    }

    #[test]
    fn nested_and_unicode() {
        let t = "Résultat : {\"é\": {\"ü\": [1, {\"x\": \"}\"}]}} fin";
        assert_eq!(ok(t), json!({"é": {"ü": [1, {"x": "}"}]}}));
    }

    #[test]
    fn errors_say_what_was_found() {
        assert_eq!(extract_json("  "), Err(ParseError::Empty));
        let e = extract_json("no json here at all").unwrap_err();
        assert!(matches!(e, ParseError::NoJson { chars: 19, .. }), "{e:?}");
        let e = extract_json("{\"a\": }").unwrap_err();
        assert!(matches!(e, ParseError::Invalid { .. }), "{e:?}");
        assert!(e.to_string().contains("{\"a\": }"), "{e}");
    }

    #[test]
    fn truncated_json_is_not_invented() {
        // A cut-off answer must fail, not be silently completed.
        assert!(extract_json("```json\n{\"a\": [1, 2").is_err());
    }

    #[test]
    fn repair_leaves_valid_json_alone() {
        let s = r#"{"a": "x, }", "b": [true, null], "c": "it's"}"#;
        assert_eq!(
            serde_json::from_str::<Value>(&repair(s)).unwrap(),
            serde_json::from_str::<Value>(s).unwrap()
        );
    }

    #[test]
    fn unclosed_openings_do_not_hide_later_json() {
        let t = "{ ".repeat(20_000) + "{\"a\": 1}";
        assert_eq!(ok(&t), json!({"a": 1}));
        let t = "x] {\"b\": 2}";
        assert_eq!(ok(t), json!({"b": 2}));
    }
}
