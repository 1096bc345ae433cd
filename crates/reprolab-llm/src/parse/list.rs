//! Numbered and bulleted lists out of an LLM answer ("1." "1)" "(1)" "- " "* " "• "), e.g. a
//! ranked list of suspected faults.

/// Which kind of marker starts an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Numbered,
    Bullet,
}

/// The items of the first list style in `text`, in order. The first item fixes the style
/// (numbered or bulleted) and its indentation; markers of the other style or deeper indentation
/// are treated as parts of the current item. Lines that continue an item (no marker, not after
/// a blank line unless indented) are joined to it with a space. Markdown bold markers (`**`;
/// not `__`, which would break Python names such as `__init__`) and heading hashes are removed. Text before the first item and paragraphs after
/// an item are ignored.
pub fn numbered_list(text: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let mut style: Option<(Kind, usize)> = None;
    // Whether the current item may still take continuation lines.
    let mut open = false;
    let mut after_blank = false;
    for raw in text.lines() {
        let line = clean(raw);
        if line.trim().is_empty() {
            after_blank = true;
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let marker = item_marker(line.trim_start());
        match (marker, style) {
            (Some((kind, rest)), None) => {
                style = Some((kind, indent));
                items.push(rest.to_string());
                open = true;
            }
            (Some((kind, rest)), Some((k0, i0))) if kind == k0 && indent <= i0 + 2 => {
                items.push(rest.to_string());
                open = true;
            }
            (Some((_, rest)), Some((_, i0))) if open && (indent > i0 || !after_blank) => {
                append(&mut items, rest);
            }
            (None, Some((_, i0))) if open && (!after_blank || indent > i0) => {
                append(&mut items, line.trim());
            }
            _ => open = false,
        }
        after_blank = false;
    }
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn append(items: &mut [String], text: &str) {
    if let Some(last) = items.last_mut() {
        if !last.is_empty() {
            last.push(' ');
        }
        last.push_str(text.trim());
    }
}

/// The line without bold markers and heading hashes, indentation kept.
fn clean(line: &str) -> String {
    let no_bold = line.replace("**", "");
    let indent = no_bold.len() - no_bold.trim_start().len();
    let body = no_bold.trim_start();
    let body = if body.starts_with('#') {
        body.trim_start_matches('#').trim_start()
    } else {
        body
    };
    format!("{}{}", &no_bold[..indent], body.trim_end())
}

/// The item kind and the text after the marker, when `line` (without indentation) starts an
/// item: `12.` `12)` `(12)` followed by a space, or `-` `*` `+` `•` followed by a space.
fn item_marker(line: &str) -> Option<(Kind, &str)> {
    let digits_then = |s: &str| -> Option<usize> {
        let n = s.chars().take_while(|c| c.is_ascii_digit()).count();
        (1..=3).contains(&n).then_some(n)
    };
    if let Some(inner) = line.strip_prefix('(')
        && let Some(n) = digits_then(inner)
        && inner[n..].starts_with(')')
    {
        return after_space(&inner[n + 1..]).map(|r| (Kind::Numbered, r));
    }
    if let Some(n) = digits_then(line)
        && matches!(line[n..].chars().next(), Some('.') | Some(')'))
    {
        return after_space(&line[n + 1..]).map(|r| (Kind::Numbered, r));
    }
    for bullet in ['-', '*', '+', '•'] {
        if let Some(rest) = line.strip_prefix(bullet) {
            return after_space(rest).map(|r| (Kind::Bullet, r));
        }
    }
    None
}

/// `s` without its leading whitespace, if it has some (a marker must be followed by a space:
/// "1.5 is the rate" and "-0.3" are not items).
fn after_space(s: &str) -> Option<&str> {
    s.starts_with([' ', '\t']).then(|| s.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_styles() {
        for t in [
            "1. alpha\n2. beta\n3. gamma",
            "1) alpha\n2) beta\n3) gamma",
            "(1) alpha\n(2) beta\n(3) gamma",
        ] {
            assert_eq!(numbered_list(t), ["alpha", "beta", "gamma"], "{t}");
        }
    }

    #[test]
    fn bullets() {
        assert_eq!(numbered_list("- a\n- b"), ["a", "b"]);
        assert_eq!(numbered_list("* a\n* b\n• c"), ["a", "b", "c"]);
    }

    #[test]
    fn preamble_and_epilogue_are_ignored() {
        let t = "Here are the likely faults:\n\n1. Learning rate too high.\n2. Wrong loss.\n\nThese should help.";
        assert_eq!(numbered_list(t), ["Learning rate too high.", "Wrong loss."]);
    }

    #[test]
    fn multi_line_items_are_joined() {
        let t = "1. The learning rate\n   is far too high.\n2. The loss\ndoes not match\n   the activation.";
        assert_eq!(
            numbered_list(t),
            [
                "The learning rate is far too high.",
                "The loss does not match the activation."
            ]
        );
    }

    #[test]
    fn bold_and_headings_are_stripped() {
        let t = "### 1. **ACH(2)**: sigmoid saturates\n### 2. **OCH** - fix `__init__`";
        assert_eq!(
            numbered_list(t),
            ["ACH(2): sigmoid saturates", "OCH - fix `__init__`"]
        );
        assert_eq!(
            numbered_list("**1.** first\n**2.** second"),
            ["first", "second"]
        );
    }

    #[test]
    fn nested_bullets_belong_to_their_item() {
        let t = "1. Change the optimiser\n   - from sgd\n   - to adam\n2. Lower the rate";
        assert_eq!(
            numbered_list(t),
            ["Change the optimiser from sgd to adam", "Lower the rate"]
        );
    }

    #[test]
    fn indented_paragraph_after_blank_line_continues() {
        let t = "1. First\n\n   More on first.\n\n2. Second";
        assert_eq!(numbered_list(t), ["First More on first.", "Second"]);
    }

    #[test]
    fn numbers_in_prose_are_not_items() {
        assert!(numbered_list("1.5 is the learning rate\n-0.3 is the bias").is_empty());
        assert!(numbered_list("No list here.").is_empty());
        assert_eq!(numbered_list("10. ten\n11. eleven"), ["ten", "eleven"]);
    }

    #[test]
    fn list_resumes_after_an_interrupting_paragraph() {
        let t = "1. a\n\nSome commentary.\n\n2. b";
        assert_eq!(numbered_list(t), ["a", "b"]);
    }
}
