//! Fault types of the study (Kim et al., Table 1) and fault labels such as `ACH(0,1)`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A fault type of the study's taxonomy. The three-letter codes are the study's (and DeepCrime's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FaultType {
    /// Wrong batch size.
    HBS,
    /// Wrong learning rate.
    HLR,
    /// Wrong number of epochs.
    HNE,
    /// Batching disabled (full-batch training).
    HDB,
    /// Wrong (changed) activation function.
    ACH,
    /// Missing (removed) activation function.
    ARM,
    /// Redundant (added) activation function.
    AAL,
    /// Redundant weight regularisation.
    RAW,
    /// Wrong weight initialisation.
    WCI,
    /// Wrong bias initialisation.
    BCI,
    /// Wrong loss function.
    LCH,
    /// Wrong optimiser.
    OCH,
    /// Missing layer.
    LRM,
    /// Redundant layer.
    LAD,
    /// Wrong number of neurons.
    LCN,
    /// Wrong convolution filter size.
    LCF,
    /// Wrong data preprocessing.
    CPP,
}

impl FaultType {
    /// Every fault type, in the study's order.
    pub const ALL: [FaultType; 17] = [
        FaultType::HBS,
        FaultType::HLR,
        FaultType::HNE,
        FaultType::HDB,
        FaultType::ACH,
        FaultType::ARM,
        FaultType::AAL,
        FaultType::RAW,
        FaultType::WCI,
        FaultType::BCI,
        FaultType::LCH,
        FaultType::OCH,
        FaultType::LRM,
        FaultType::LAD,
        FaultType::LCN,
        FaultType::LCF,
        FaultType::CPP,
    ];

    /// The three-letter code, e.g. `"HLR"`.
    pub fn code(self) -> &'static str {
        match self {
            FaultType::HBS => "HBS",
            FaultType::HLR => "HLR",
            FaultType::HNE => "HNE",
            FaultType::HDB => "HDB",
            FaultType::ACH => "ACH",
            FaultType::ARM => "ARM",
            FaultType::AAL => "AAL",
            FaultType::RAW => "RAW",
            FaultType::WCI => "WCI",
            FaultType::BCI => "BCI",
            FaultType::LCH => "LCH",
            FaultType::OCH => "OCH",
            FaultType::LRM => "LRM",
            FaultType::LAD => "LAD",
            FaultType::LCN => "LCN",
            FaultType::LCF => "LCF",
            FaultType::CPP => "CPP",
        }
    }

    /// A short lowercase description, e.g. `"wrong learning rate"`.
    pub fn description(&self) -> &'static str {
        match self {
            FaultType::HBS => "wrong batch size",
            FaultType::HLR => "wrong learning rate",
            FaultType::HNE => "wrong number of epochs",
            FaultType::HDB => "batching disabled (full-batch training)",
            FaultType::ACH => "wrong activation function",
            FaultType::ARM => "missing activation function",
            FaultType::AAL => "redundant activation function",
            FaultType::RAW => "redundant weight regularisation",
            FaultType::WCI => "wrong weight initialisation",
            FaultType::BCI => "wrong bias initialisation",
            FaultType::LCH => "wrong loss function",
            FaultType::OCH => "wrong optimiser",
            FaultType::LRM => "missing layer",
            FaultType::LAD => "redundant layer",
            FaultType::LCN => "wrong number of neurons",
            FaultType::LCF => "wrong convolution filter size",
            FaultType::CPP => "wrong data preprocessing",
        }
    }

    /// Whether the fault concerns particular layers, so that its labels may carry layer indices
    /// (`ACH(1,3)`). The others (`HLR`, `LCH`, `OCH`, …) concern the whole training.
    pub fn is_layer_specific(self) -> bool {
        matches!(
            self,
            FaultType::ACH
                | FaultType::ARM
                | FaultType::AAL
                | FaultType::RAW
                | FaultType::WCI
                | FaultType::BCI
                | FaultType::LRM
                | FaultType::LAD
                | FaultType::LCN
                | FaultType::LCF
        )
    }
}

/// The repair operator a fault type counts as (the study's merges, used by asymmetric Jaccard and
/// by localisation's answer): a removed (`ARM`) or added (`AAL`)
/// activation is an activation change (`ACH`); a missing layer (`LRM`) is the layer-count
/// operator (`LAD`). Other types are themselves.
pub fn normalize_type(t: FaultType) -> FaultType {
    match t {
        FaultType::ARM | FaultType::AAL => FaultType::ACH,
        FaultType::LRM => FaultType::LAD,
        other => other,
    }
}

impl fmt::Display for FaultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Why a fault type or fault label could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseFaultError {
    /// What is wrong, for humans, with what was expected (`unknown fault type "XYZ"; expected
    /// one of HBS, HLR, …`).
    pub message: String,
    /// Just what is wrong (`missing ')' at the end`).
    pub reason: String,
}

impl ParseFaultError {
    fn new(message: impl Into<String>) -> Self {
        let message = message.into();
        ParseFaultError {
            reason: message.clone(),
            message,
        }
    }
}

/// The codes of all fault types, comma separated (for messages).
pub(crate) fn all_codes() -> String {
    FaultType::ALL
        .iter()
        .map(|t| t.code())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for FaultType {
    type Err = ParseFaultError;

    /// Parses a code such as `HLR`; case-insensitive, surrounding whitespace ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        FaultType::ALL
            .iter()
            .copied()
            .find(|ft| ft.code().eq_ignore_ascii_case(t))
            .ok_or_else(|| {
                ParseFaultError::new(format!(
                    "unknown fault type {t:?}; expected one of {}",
                    all_codes()
                ))
            })
    }
}

/// A fault type, optionally restricted to layers: `HLR`, `ACH(1)`, `ACH(0,1)`.
///
/// Layers are kept sorted and without duplicates, so that equal labels compare equal.
/// An empty `layers` means "no particular layer" (or "layer not known").
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FaultLabel {
    pub fault: FaultType,
    pub layers: Vec<u32>,
}

impl FaultLabel {
    /// A label without layers.
    pub fn new(fault: FaultType) -> Self {
        FaultLabel {
            fault,
            layers: Vec::new(),
        }
    }

    /// A label on the given layers (sorted and deduplicated).
    pub fn with_layers(fault: FaultType, layers: impl IntoIterator<Item = u32>) -> Self {
        let mut layers: Vec<u32> = layers.into_iter().collect();
        layers.sort_unstable();
        layers.dedup();
        FaultLabel { fault, layers }
    }
}

impl From<FaultType> for FaultLabel {
    fn from(fault: FaultType) -> Self {
        FaultLabel::new(fault)
    }
}

impl fmt::Display for FaultLabel {
    /// `HLR`, `ACH(1)`, `ACH(0,1)`: the form [`FromStr`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.fault.code())?;
        if !self.layers.is_empty() {
            let layers: Vec<String> = self.layers.iter().map(u32::to_string).collect();
            write!(f, "({})", layers.join(","))?;
        }
        Ok(())
    }
}

impl FromStr for FaultLabel {
    type Err = ParseFaultError;

    /// Parses `HLR`, `ACH(1)`, `ACH(0,1)` or `ACH(0, 1)`. Layer indices are non-negative
    /// integers; only layer-specific fault types (see [`FaultType::is_layer_specific`]) take them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let malformed = |why: &str| ParseFaultError {
            message: format!(
                "malformed fault label {text:?}: {why}; expected a fault type optionally followed \
                 by layer indices, like \"HLR\" or \"ACH(0,1)\""
            ),
            reason: why.to_string(),
        };
        let (code, layers) = match text.find('(') {
            None => {
                if text.contains(')') {
                    return Err(malformed("')' without '('"));
                }
                (text, None)
            }
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(malformed("missing ')' at the end"));
                };
                (text[..open].trim_end(), Some(inner))
            }
        };
        if code.is_empty() {
            return Err(malformed("no fault type"));
        }
        let fault: FaultType = code.parse().map_err(|e: ParseFaultError| ParseFaultError {
            reason: format!("unknown fault type {code:?}"),
            ..e
        })?;
        let Some(inner) = layers else {
            return Ok(FaultLabel::new(fault));
        };
        if !fault.is_layer_specific() {
            let reason = format!(
                "{fault} ({}) concerns no particular layer and takes no layer indices; write just \"{fault}\"",
                fault.description()
            );
            return Err(ParseFaultError {
                message: format!("fault label {text:?}: {reason}"),
                reason,
            });
        }
        let mut out = Vec::new();
        for part in inner.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(malformed("empty layer index"));
            }
            match part.parse::<u32>() {
                Ok(n) if part.bytes().all(|b| b.is_ascii_digit()) => out.push(n),
                _ => {
                    return Err(malformed(&format!(
                        "layer index {part:?} is not a non-negative integer"
                    )));
                }
            }
        }
        Ok(FaultLabel::with_layers(fault, out))
    }
}

impl Serialize for FaultLabel {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FaultLabel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_types_round_trip() {
        for t in FaultType::ALL {
            assert_eq!(t.code().parse::<FaultType>().unwrap(), t);
            assert_eq!(
                t.to_string().to_lowercase().parse::<FaultType>().unwrap(),
                t
            );
            assert!(!t.description().is_empty());
        }
        assert_eq!(FaultType::HLR.description(), "wrong learning rate");
        let e = "XYZ".parse::<FaultType>().unwrap_err();
        assert!(e.message.contains("unknown fault type \"XYZ\""), "{e}");
        assert!(e.message.contains("HBS, HLR"), "{e}");
    }

    #[test]
    fn labels_parse_and_display() {
        let l: FaultLabel = "ACH(0,1)".parse().unwrap();
        assert_eq!(l, FaultLabel::with_layers(FaultType::ACH, [0, 1]));
        assert_eq!(l.to_string(), "ACH(0,1)");
        let l: FaultLabel = " ACH( 3 , 1,1 ) ".parse().unwrap();
        assert_eq!(l.layers, vec![1, 3]);
        assert_eq!(l.to_string(), "ACH(1,3)");
        let l: FaultLabel = "HLR".parse().unwrap();
        assert_eq!(l, FaultLabel::new(FaultType::HLR));
        assert_eq!(l.to_string(), "HLR");
        assert_eq!("ach".parse::<FaultLabel>().unwrap().fault, FaultType::ACH);
    }

    #[test]
    fn malformed_labels_are_rejected() {
        for bad in [
            "", "ACH(", "ACH)", "ACH()", "ACH(1,)", "ACH(-1)", "ACH(x)", "ACH(1)x", "(1)", "FOO",
            "HLR(1)", "ACH(+1)",
        ] {
            assert!(
                bad.parse::<FaultLabel>().is_err(),
                "{bad:?} should be rejected"
            );
        }
        let e = "HLR(1)".parse::<FaultLabel>().unwrap_err();
        assert!(e.message.contains("takes no layer"), "{e}");
    }

    #[test]
    fn labels_serialize_as_strings() {
        let l = FaultLabel::with_layers(FaultType::WCI, [2]);
        let j = serde_json::to_string(&l).unwrap();
        assert_eq!(j, "\"WCI(2)\"");
        let back: FaultLabel = serde_json::from_str(&j).unwrap();
        assert_eq!(back, l);
        assert!(serde_json::from_str::<FaultLabel>("\"WCI(\"").is_err());
    }
}
