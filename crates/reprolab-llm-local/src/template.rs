//! Chat templates: turning a conversation into the exact prompt each model was tuned on.
//!
//! The GGUF files carry Jinja templates (SmolLM2's) or none at all (this Gemma file), so the two
//! formats are written out here by hand, matching the Hugging Face templates token for token.
//! A rendered prompt is a list of [`Piece`]s rather than one string so that control tokens are
//! looked up by id and message text is always tokenized as plain text: a message that contains
//! the characters `<|im_end|>` cannot end its turn early.

use crate::LocalError;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    /// Parses the role names used by OpenAI-style chat APIs.
    pub fn parse(index: usize, name: &str) -> Result<Role, LocalError> {
        match name {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            other => Err(LocalError::Message {
                index,
                detail: format!("role '{other}': expected system, user or assistant"),
            }),
        }
    }
}

/// One chat message, owned so that context fitting can shorten it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

/// Part of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A control token, by its text in the vocabulary (e.g. `<|im_start|>`).
    Special(&'static str),
    /// Text to tokenize as text.
    Text(String),
}

/// The prompt formats this crate renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatTemplate {
    /// SmolLM2's ChatML: `<|im_start|>role\n…<|im_end|>\n`; when the conversation does not open
    /// with a system message, SmolLM2's own template inserts its default system prompt.
    ChatMl,
    /// Gemma 3: `<bos><start_of_turn>user\n…<end_of_turn>\n`, assistant turns are called
    /// `model`, and there is no system role: system text opens the first user turn.
    Gemma,
}

/// The system prompt SmolLM2's chat template adds when the caller gives none.
pub const SMOLLM2_DEFAULT_SYSTEM: &str =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

impl ChatTemplate {
    /// Renders `messages` followed by the prompt that starts the assistant's reply.
    pub fn render(self, messages: &[Message]) -> Vec<Piece> {
        match self {
            ChatTemplate::ChatMl => render_chatml(messages),
            ChatTemplate::Gemma => render_gemma(messages),
        }
    }

    /// Control tokens after which the model's turn is over (the EOS token is added by the
    /// loader from the GGUF metadata).
    pub fn stop_markers(self) -> &'static [&'static str] {
        match self {
            ChatTemplate::ChatMl => &["<|im_end|>", "<|endoftext|>"],
            ChatTemplate::Gemma => &["<end_of_turn>", "<eos>"],
        }
    }
}

fn render_chatml(messages: &[Message]) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut turn = |role: &str, content: &str| {
        out.push(Piece::Special("<|im_start|>"));
        out.push(Piece::Text(format!("{role}\n{content}")));
        out.push(Piece::Special("<|im_end|>"));
        out.push(Piece::Text("\n".to_string()));
    };
    if messages.first().is_none_or(|m| m.role != Role::System) {
        turn("system", SMOLLM2_DEFAULT_SYSTEM);
    }
    for m in messages {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        turn(role, &m.content);
    }
    out.push(Piece::Special("<|im_start|>"));
    out.push(Piece::Text("assistant\n".to_string()));
    out
}

fn render_gemma(messages: &[Message]) -> Vec<Piece> {
    // Gemma's template folds the system message into the first user turn as
    // "<system>\n\n<user>", the system text as it is and the user text trimmed; several system
    // messages are joined the same way.
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut system = (!system.is_empty()).then(|| system.join("\n\n"));
    let mut out = vec![Piece::Special("<bos>")];
    let mut turn = |role: &str, content: String| {
        out.push(Piece::Special("<start_of_turn>"));
        out.push(Piece::Text(format!("{role}\n{content}")));
        out.push(Piece::Special("<end_of_turn>"));
        out.push(Piece::Text("\n".to_string()));
    };
    for m in messages {
        match m.role {
            Role::System => {}
            Role::User => {
                let content = match system.take() {
                    Some(sys) => format!("{sys}\n\n{}", jinja_trim(&m.content)),
                    None => jinja_trim(&m.content).to_string(),
                };
                turn("user", content);
            }
            Role::Assistant => turn("model", jinja_trim(&m.content).to_string()),
        }
    }
    // No user message to open: give the system text its own user turn (Hugging Face's
    // template would drop it).
    if let Some(sys) = system.take() {
        turn("user", jinja_trim(&sys).to_string());
    }
    out.push(Piece::Special("<start_of_turn>"));
    out.push(Piece::Text("model\n".to_string()));
    out
}

/// Jinja's `trim` (Python's `str.strip()`): Unicode whitespace and, unlike Rust's `trim`, the
/// separators U+001C..U+001F.
fn jinja_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// The prompt as one string, control tokens spelled out; for logs and tests.
pub fn to_text(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Special(s) => *s,
            Piece::Text(t) => t.as_str(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(list: &[(Role, &str)]) -> Vec<Message> {
        list.iter()
            .map(|(role, content)| Message {
                role: *role,
                content: content.to_string(),
            })
            .collect()
    }

    #[test]
    fn chatml_with_system_message() {
        let m = msgs(&[(Role::System, "Be terse."), (Role::User, "Hi")]);
        assert_eq!(
            to_text(&ChatTemplate::ChatMl.render(&m)),
            "<|im_start|>system\nBe terse.<|im_end|>\n\
             <|im_start|>user\nHi<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    #[test]
    fn chatml_without_system_message_gets_smollm2_default() {
        let m = msgs(&[
            (Role::User, "Hi"),
            (Role::Assistant, "Hello."),
            (Role::User, "Bye"),
        ]);
        assert_eq!(
            to_text(&ChatTemplate::ChatMl.render(&m)),
            format!(
                "<|im_start|>system\n{SMOLLM2_DEFAULT_SYSTEM}<|im_end|>\n\
                 <|im_start|>user\nHi<|im_end|>\n\
                 <|im_start|>assistant\nHello.<|im_end|>\n\
                 <|im_start|>user\nBye<|im_end|>\n\
                 <|im_start|>assistant\n"
            )
        );
    }

    #[test]
    fn control_strings_inside_messages_stay_text() {
        let m = msgs(&[(Role::User, "say <|im_end|> please")]);
        let pieces = ChatTemplate::ChatMl.render(&m);
        let specials = pieces
            .iter()
            .filter(|p| matches!(p, Piece::Special("<|im_end|>")))
            .count();
        assert_eq!(
            specials, 2,
            "system turn + user turn, not the text: {pieces:?}"
        );
        assert!(pieces.contains(&Piece::Text("user\nsay <|im_end|> please".into())));
    }

    #[test]
    fn gemma_folds_system_into_first_user_turn_and_names_assistant_model() {
        let m = msgs(&[
            (Role::System, "Answer in JSON."),
            (Role::User, " What is lr? "),
            (Role::Assistant, "{\"lr\": 0.01}"),
            (Role::User, "Thanks"),
        ]);
        assert_eq!(
            to_text(&ChatTemplate::Gemma.render(&m)),
            "<bos><start_of_turn>user\nAnswer in JSON.\n\nWhat is lr?<end_of_turn>\n\
             <start_of_turn>model\n{\"lr\": 0.01}<end_of_turn>\n\
             <start_of_turn>user\nThanks<end_of_turn>\n\
             <start_of_turn>model\n"
        );
    }

    #[test]
    fn gemma_keeps_system_text_as_is_and_trims_turns_like_jinja() {
        // Hugging Face's template: `messages[0]['content'] + '\n\n'`, then `content | trim`.
        let m = msgs(&[
            (Role::System, " Be terse. \n"),
            (Role::User, "\u{1f}\n  Hi there \u{a0}\n"),
        ]);
        assert_eq!(
            to_text(&ChatTemplate::Gemma.render(&m)),
            "<bos><start_of_turn>user\n Be terse. \n\n\nHi there<end_of_turn>\n\
             <start_of_turn>model\n"
        );
    }

    #[test]
    fn gemma_without_system() {
        let m = msgs(&[(Role::User, "Hi")]);
        assert_eq!(
            to_text(&ChatTemplate::Gemma.render(&m)),
            "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn gemma_system_only_becomes_a_user_turn() {
        let m = msgs(&[(Role::System, "Say hi.")]);
        assert_eq!(
            to_text(&ChatTemplate::Gemma.render(&m)),
            "<bos><start_of_turn>user\nSay hi.<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn unknown_role_is_an_error_naming_the_message() {
        let err = Role::parse(3, "tool").unwrap_err().to_string();
        assert!(
            err.contains("chat message 3") && err.contains("'tool'"),
            "{err}"
        );
        assert_eq!(Role::parse(0, "assistant").unwrap(), Role::Assistant);
    }
}
