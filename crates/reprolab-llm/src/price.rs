//! What a call costs. A small built-in table of list prices for well-known hosted models (US
//! dollars per million tokens); the config file can add or override entries. Unknown models have
//! no price: their cost is `None`, shown as "-" and not counted against `--llm-max-cost`.

use serde::Deserialize;

use crate::Usage;

/// US dollars per million input and output tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Price {
    #[serde(rename = "in")]
    pub input_per_mtok: f64,
    #[serde(rename = "out")]
    pub output_per_mtok: f64,
}

impl Price {
    pub const FREE: Price = Price {
        input_per_mtok: 0.0,
        output_per_mtok: 0.0,
    };

    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.input_per_mtok
            + usage.completion_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// Built-in list prices (checked against the providers' pricing pages in 2025). Matched as a
/// prefix of the model name, longest prefix first, so dated snapshots
/// (`gpt-4o-mini-2024-07-18`, `claude-3-5-haiku-20241022`) find their family.
const BUILTIN: &[(&str, f64, f64)] = &[
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-3.5-turbo", 0.50, 1.50),
    ("o3-mini", 1.10, 4.40),
    ("o4-mini", 1.10, 4.40),
    ("claude-3-haiku", 0.25, 1.25),
    ("claude-3-5-haiku", 0.80, 4.00),
    ("claude-haiku-4", 1.00, 5.00),
    ("claude-3-5-sonnet", 3.00, 15.00),
    ("claude-3-7-sonnet", 3.00, 15.00),
    ("claude-sonnet-4", 3.00, 15.00),
    ("claude-opus-4", 15.00, 75.00),
];

/// The built-in price of `model`, if the table knows its family.
pub fn builtin_price(model: &str) -> Option<Price> {
    BUILTIN
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, i, o)| Price {
            input_per_mtok: i,
            output_per_mtok: o,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(
            builtin_price("gpt-4o-mini-2024-07-18")
                .unwrap()
                .input_per_mtok,
            0.15
        );
        assert_eq!(
            builtin_price("gpt-4o-2024-08-06").unwrap().input_per_mtok,
            2.50
        );
        assert_eq!(builtin_price("gpt-4.1-mini").unwrap().output_per_mtok, 1.60);
        assert!(builtin_price("llama3.2:1b").is_none());
    }

    #[test]
    fn cost_is_per_million_tokens() {
        let p = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
        };
        let c = p.cost(Usage {
            prompt_tokens: 500_000,
            completion_tokens: 250_000,
        });
        assert!((c - 1.0).abs() < 1e-12);
    }
}
