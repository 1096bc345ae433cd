//! Making a conversation fit the context window.
//!
//! Long conversations lose their oldest content first: tokens are cut from the start of the
//! oldest non-system message (then the next one, ...), because the system prompt carries the
//! instructions and the last messages carry the question. If only system text is left and the
//! prompt is still too long, fitting fails and the caller reports it.

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
    let mut cut = 0;
    loop {
        let tokens = count(messages)?;
        if tokens <= budget {
            return Ok(Fit::Fits { cut });
        }
        let excess = tokens - budget;
        let Some(oldest) = messages
            .iter_mut()
            .find(|m| m.role != Role::System && !m.content.is_empty())
        else {
            return Ok(Fit::TooLong { tokens });
        };
        let shorter = cut_front(&oldest.content, excess)?;
        // Re-tokenizing a cut text can merge differently; insist on progress so the loop ends.
        oldest.content = if shorter.len() < oldest.content.len() {
            shorter
        } else {
            String::new()
        };
        cut += excess;
    }
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
    fn cuts_the_start_of_the_oldest_non_system_message() {
        let mut m = vec![
            msg(Role::System, "keep these words"),
            msg(Role::User, "u1 u2 u3 u4"),
            msg(Role::Assistant, "a1 a2"),
            msg(Role::User, "q1 q2"),
        ];
        // 5 + 6 + 4 + 4 = 19 tokens; budget 16 → cut 3 from "u1 u2 u3 u4".
        assert_eq!(
            fit(&mut m, 16, count, cut_front).unwrap(),
            Fit::Fits { cut: 3 }
        );
        assert_eq!(m[0].content, "keep these words");
        assert_eq!(m[1].content, "u4");
        assert_eq!(m[3].content, "q1 q2");
    }

    #[test]
    fn moves_on_to_the_next_message_when_the_oldest_is_used_up() {
        let mut m = vec![
            msg(Role::User, "u1 u2"),
            msg(Role::Assistant, "a1 a2 a3"),
            msg(Role::User, "q"),
        ];
        // 4 + 5 + 3 = 12; budget 8 → empty "u1 u2" (−2), then cut 2 of "a1 a2 a3".
        assert!(matches!(
            fit(&mut m, 8, count, cut_front).unwrap(),
            Fit::Fits { .. }
        ));
        assert_eq!(m[0].content, "");
        assert_eq!(m[1].content, "a3");
        assert_eq!(m[2].content, "q");
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
