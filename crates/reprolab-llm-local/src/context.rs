//! Making a conversation fit the context window.
//!
//! What a conversation cannot lose is its instructions (the system prompt), its task (the first
//! user message: a bug report, a paper) and its latest turn (the question now asked). So, in
//! this order, until the prompt fits:
//! 1. the turns between the task and the latest one lose tokens from their start, oldest first
//!    (an old attempt's feedback matters least);
//! 2. the task loses tokens from its middle: its opening (what is asked) and its end (often the
//!    instruction that closes it) stay;
//! 3. the latest turn loses tokens from its start.
//!
//! If only system text is left and the prompt is still too long, fitting fails and the caller
//! reports it.

use crate::template::{Message, Role};

/// The outcome of [`fit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// The prompt fits; `cut` tokens (approximately, as counted per message) were removed.
    Fits { cut: usize },
    /// Even with every non-system message emptied the prompt has `tokens` > budget.
    TooLong { tokens: usize },
}

/// Shortens `messages` in place until `count(messages) <= budget`.
///
/// `count` gives the token count of the whole rendered prompt; `cut_front(text, n)` returns
/// `text` without its first `n` tokens (empty when it has no more than `n`).
pub fn fit<E>(
    messages: &mut [Message],
    budget: usize,
    count: impl Fn(&[Message]) -> Result<usize, E>,
    cut_front: impl Fn(&str, usize) -> Result<String, E>,
) -> Result<Fit, E> {
    let turns: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i].role != Role::System)
        .collect();
    let (task, latest) = (turns.first().copied(), turns.last().copied());
    let middle: Vec<usize> = turns
        .iter()
        .copied()
        .filter(|&i| Some(i) != task && Some(i) != latest)
        .collect();
    let mut cut = 0;
    loop {
        let tokens = count(messages)?;
        if tokens <= budget {
            return Ok(Fit::Fits { cut });
        }
        let excess = tokens - budget;
        let nonempty = |i: &usize| !messages[*i].content.is_empty();
        let (at, from_middle) = match middle.iter().find(|i| nonempty(i)) {
            Some(&i) => (i, false),
            None => match task.filter(nonempty) {
                // A task that is also the latest turn is still cut from its middle: its end
                // is the question.
                Some(i) => (i, true),
                None => match latest.filter(nonempty) {
                    Some(i) => (i, false),
                    None => return Ok(Fit::TooLong { tokens }),
                },
            },
        };
        let text = &messages[at].content;
        let shorter = if from_middle {
            cut_middle(text, excess, &cut_front)?
        } else {
            cut_front(text, excess)?
        };
        // Re-tokenizing a cut text can merge differently; insist on progress so the loop ends.
        messages[at].content = if shorter.len() < text.len() {
            shorter
        } else {
            String::new()
        };
        cut += excess;
    }
}

/// Where a text was cut in its middle.
const MARK: &str = "\n…\n";
/// Tokens the mark itself may take.
const MARK_TOKENS: usize = 2;

/// `text` with about `n` tokens taken out of its middle: from the start of its second half the
/// first time (split at a space, a mark put there), then right after the mark, so that repeated
/// cuts widen one gap and the opening stays whole.
fn cut_middle<E>(
    text: &str,
    n: usize,
    cut_front: &impl Fn(&str, usize) -> Result<String, E>,
) -> Result<String, E> {
    let (head, tail, n) = match text.find(MARK) {
        Some(at) => (&text[..at], &text[at + MARK.len()..], n),
        None => {
            let half = text.len() / 2;
            let at = text[..half]
                .rfind(char::is_whitespace)
                .unwrap_or_else(|| text.floor_char_boundary(half));
            let (head, tail) = text.split_at(at);
            (head, tail, n + MARK_TOKENS)
        }
    };
    let tail = cut_front(tail, n)?;
    if tail.is_empty() {
        // The second half is used up: the opening goes next, from its start.
        return cut_front(head, n);
    }
    Ok(format!("{head}{MARK}{tail}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// A stand-in tokenizer: one token per whitespace-separated word, plus 2 per message.
    fn count(messages: &[Message]) -> Result<usize, Infallible> {
        Ok(messages
            .iter()
            .map(|m| 2 + m.content.split_whitespace().count())
            .sum())
    }

    fn cut_front(text: &str, n: usize) -> Result<String, Infallible> {
        Ok(text
            .split_whitespace()
            .skip(n)
            .collect::<Vec<_>>()
            .join(" "))
    }

    fn msg(role: Role, content: &str) -> Message {
        Message {
            role,
            content: content.to_string(),
        }
    }

    #[test]
    fn short_prompt_is_untouched() {
        let mut m = vec![msg(Role::User, "a b c")];
        assert_eq!(
            fit(&mut m, 10, count, cut_front).unwrap(),
            Fit::Fits { cut: 0 }
        );
        assert_eq!(m[0].content, "a b c");
    }

    #[test]
    fn the_turns_between_task_and_question_go_first() {
        let mut m = vec![
            msg(Role::System, "keep these words"),
            msg(Role::User, "t1 t2 t3 t4"),
            msg(Role::Assistant, "a1 a2 a3"),
            msg(Role::User, "f1 f2"),
            msg(Role::User, "q1 q2"),
        ];
        // 5 + 6 + 5 + 4 + 4 = 24; budget 19 → the answer (3 tokens) goes, then 2 of the
        // feedback; the task and the question stay whole.
        assert!(matches!(
            fit(&mut m, 19, count, cut_front).unwrap(),
            Fit::Fits { .. }
        ));
        assert_eq!(m[1].content, "t1 t2 t3 t4");
        assert_eq!(m[2].content, "");
        assert_eq!(m[3].content, "");
        assert_eq!(m[4].content, "q1 q2");
    }

    #[test]
    fn then_the_task_loses_its_middle_and_keeps_its_opening() {
        let mut m = vec![
            msg(Role::User, "open1 open2 open3 m1 m2 m3 m4 m5 m6 end"),
            msg(Role::User, "q"),
        ];
        // 12 + 3 = 15; budget 13 → the start of the task's second half goes (with room for
        // the mark).
        assert!(matches!(
            fit(&mut m, 13, count, cut_front).unwrap(),
            Fit::Fits { .. }
        ));
        assert_eq!(m[0].content, "open1 open2 open3\n…\nm5 m6 end");
        assert_eq!(m[1].content, "q");
        // Cut again: the same gap widens, the opening stays.
        assert!(matches!(
            fit(&mut m, 11, count, cut_front).unwrap(),
            Fit::Fits { .. }
        ));
        assert!(
            m[0].content.starts_with("open1 open2 open3"),
            "{}",
            m[0].content
        );
        assert_eq!(m[0].content.matches('…').count(), 1, "{}", m[0].content);
    }

    #[test]
    fn system_text_alone_too_long_is_reported() {
        let mut m = vec![
            msg(Role::System, "s1 s2 s3 s4 s5"),
            msg(Role::User, "q1 q2"),
        ];
        assert_eq!(
            fit(&mut m, 5, count, cut_front).unwrap(),
            Fit::TooLong { tokens: 9 }
        );
        assert_eq!(m[1].content, "", "non-system text was used up first");
    }
}
