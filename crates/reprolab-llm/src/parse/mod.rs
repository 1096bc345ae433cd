//! Tolerant parsing of LLM answers: JSON inside fences or prose (with repairs for the usual
//! JavaScript / Python habits), numbered lists, and program code. Pure functions: an answer in,
//! structured data out, with errors that show what was found. The output is never trusted
//! further than its syntax: callers validate it against a schema or a search space and check it
//! by execution.

mod code;
mod fence;
mod json;
mod list;

pub use code::{CodeExtraction, CodeSource, extract_code};
pub use fence::{Fence, fences};
pub use json::{ParseError, balanced_spans, extract_json, repair};
pub use list::numbered_list;

/// At most 200 characters of `s`, on one line, for error messages.
fn excerpt(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= 200 {
        flat.to_string()
    } else {
        format!("{}…", flat.chars().take(200).collect::<String>())
    }
}
