//! User-defined tokens: vocabulary entries that stand for a whole run of text (Gemma's runs of
//! 2–31 spaces and of newlines, HTML tags such as `<table>`, `[multimodal]`) and that
//! SentencePiece, llama.cpp and Hugging Face split out of the text before tokenizing the rest.
//!
//! shimmytok 0.8 does that only for UGM (T5-style) vocabularies. For Gemma's SentencePiece one it
//! tokenized `"    return"` as four single spaces and `return`, where the model was trained on
//! one four-space token: Python prompts took up to 2.2× the tokens, in sequences the model never
//! saw. So the split happens here, with shimmytok's public vocabulary, before its `encode`.

use std::collections::HashMap;

use shimmytok::{TokenType, Tokenizer};

/// A piece of text to encode: a user-defined token, or text between them.
#[derive(Debug, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Token(u32),
}

/// The user-defined tokens of a vocabulary, by first character, longest first.
#[derive(Debug, Default)]
pub struct UserTokens {
    by_first: HashMap<char, Vec<(String, u32)>>,
}

impl UserTokens {
    /// The user-defined tokens of `tokenizer`; none for a UGM vocabulary, which shimmytok splits
    /// itself.
    pub fn of(tokenizer: &Tokenizer) -> UserTokens {
        if tokenizer.model_type() == "t5" {
            return UserTokens::default();
        }
        let tokens = (0..tokenizer.vocab_size() as u32)
            .filter(|&id| tokenizer.token_type(id) == TokenType::UserDefined)
            .filter_map(|id| Some((tokenizer.token_to_piece(id).ok()?, id)));
        UserTokens::from_pieces(tokens)
    }

    fn from_pieces(pieces: impl IntoIterator<Item = (String, u32)>) -> UserTokens {
        let mut by_first: HashMap<char, Vec<(String, u32)>> = HashMap::new();
        for (text, id) in pieces {
            if let Some(c) = text.chars().next() {
                by_first.entry(c).or_default().push((text, id));
            }
        }
        for list in by_first.values_mut() {
            list.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        }
        UserTokens { by_first }
    }

    /// `text` cut into user-defined tokens (the longest that matches, from the left, as
    /// SentencePiece does) and the text between them.
    pub fn split<'a>(&self, text: &'a str) -> Vec<Segment<'a>> {
        if self.by_first.is_empty() {
            return vec![Segment::Text(text)];
        }
        let mut out = Vec::new();
        let mut gap_start = 0;
        let mut pos = 0;
        while let Some(c) = text[pos..].chars().next() {
            let hit = self.by_first.get(&c).and_then(|list| {
                list.iter()
                    .find(|(token, _)| text[pos..].starts_with(token.as_str()))
            });
            match hit {
                Some((token, id)) => {
                    if gap_start < pos {
                        out.push(Segment::Text(&text[gap_start..pos]));
                    }
                    out.push(Segment::Token(*id));
                    pos += token.len();
                    gap_start = pos;
                }
                None => pos += c.len_utf8(),
            }
        }
        if gap_start < text.len() {
            out.push(Segment::Text(&text[gap_start..]));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Segment::{Text, Token};

    fn gemma_like() -> UserTokens {
        let spaces = (2..=31).map(|n| (" ".repeat(n), 136 + n as u32));
        let tags = [("<table>".to_string(), 168), ("<b>".to_string(), 200)];
        UserTokens::from_pieces(spaces.chain(tags))
    }

    #[test]
    fn indentation_and_tags_become_their_tokens() {
        let u = gemma_like();
        assert_eq!(
            u.split("    return None"),
            [Token(140), Text("return None")]
        );
        assert_eq!(
            u.split("<table><b>x</b>"),
            [Token(168), Token(200), Text("x</b>")]
        );
        // A single space is ordinary text; the longest run matches first (31 + 9 for 40).
        assert_eq!(u.split("a b"), [Text("a b")]);
        assert_eq!(u.split(&" ".repeat(40)), [Token(167), Token(145)]);
    }

    #[test]
    fn without_user_tokens_the_text_is_one_segment() {
        let u = UserTokens::default();
        assert_eq!(u.split("    x"), [Text("    x")]);
        assert_eq!(
            gemma_like().split("é  ü"),
            [Text("é"), Token(138), Text("ü")]
        );
    }
}
