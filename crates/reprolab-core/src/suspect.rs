//! A suspected fault: what fault localisation answers (`reprolab-localize` ranks them) and what
//! FL-guided repair acts on (`reprolab-repair`). Here so that neither crate depends on the other.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::FaultLabel;

/// The confidence a suspect needs to be part of the localisation answer
/// (`reprolab_localize::rank_to_types`) and to guide FL-guided repair. Rules that only hint at a fault (non-zero bias init, few epochs, a slow optimiser setting)
/// stay below it unless other evidence for the same fault adds up (see `reprolab_localize::merge`).
pub const THRESHOLD: f64 = 0.5;

/// A suspected fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspect {
    /// Fault type and, for layer-specific types, the config layer indices (`ACH(2)`).
    pub label: FaultLabel,
    /// In [0, 1].
    pub confidence: f64,
    /// Why: the rule or symptom with the observed numbers.
    pub evidence: String,
    /// A concrete config change, e.g. `act2: sigmoid -> softmax`; only values the search space
    /// accepts.
    pub suggestion: Option<String>,
    /// The rule or monitor id (`out-softmax-binary-ce`, `dying-relu`, …); merged suspects join
    /// their sources with `+`.
    pub source: String,
}

impl Suspect {
    pub fn new(
        label: FaultLabel,
        confidence: f64,
        source: impl Into<String>,
        evidence: impl Into<String>,
    ) -> Self {
        Suspect {
            label,
            confidence: confidence.clamp(0.0, 1.0),
            evidence: evidence.into(),
            suggestion: None,
            source: source.into(),
        }
    }

    /// With a suggested change (kept `None` when `s` is `None`).
    pub fn suggest(mut self, s: Option<String>) -> Self {
        self.suggestion = s;
        self
    }
}

impl fmt::Display for Suspect {
    /// `ACH(2) 0.70 [out-softmax-binary-ce] evidence (suggest: act2: softmax -> sigmoid)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:.2} [{}] {}",
            self.label, self.confidence, self.source, self.evidence
        )?;
        if let Some(s) = &self.suggestion {
            write!(f, " (suggest: {s})")?;
        }
        Ok(())
    }
}
