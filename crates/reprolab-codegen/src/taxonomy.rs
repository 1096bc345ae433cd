//! Deep-Bench's failure taxonomy (paper Fig. 3 and appendix E) with its DL-specific subtypes,
//! and a rule table that labels a failure from its evidence: the sample's status, the exception
//! type, its message and its traceback.
//!
//! The paper's authors labelled failures by hand after reading the code; rules can only see what
//! the run left behind, so some categories that need intent (prompt-biased code, non-prompted
//! consideration, constant value errors) are rarely or never produced by the rules. Each label
//! records the rule that fired, so a report can show how much rests on the catch-all, and an
//! optional LLM classifier ([`FailureClassifier`]) can refine a label with the code and the
//! prompt at hand.
//!
//! Rules are tried in order and the first match wins: the sample's status, syntax errors, test
//! assertions (by what they compare), DL error messages (shape, dtype, autograd, device), then
//! per exception type, then the catch-all.

use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::outcome::Status;

/// Deep-Bench's bug categories.
///
/// Read (from a generations file, a results file or a classifier's answer) by
/// [`Category::parse`]: the internal name or Deep-Bench's title, in any case and punctuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum Category {
    Misinterpretation,
    SyntaxError,
    SillyMistake,
    PromptBiasedCode,
    MissingCornerCase,
    WrongInputType,
    HallucinatedObject,
    WrongAttribute,
    NonPromptedConsideration,
    OperationCalculationError,
    PerformanceIssue,
    PromptMissingInformation,
    UndefinedReference,
    ConstantValueError,
}

/// The DL-specific subtypes of appendix E, plus "not DL-related".
///
/// Read by [`Subtype::parse`], which also takes the paper's wording of each subtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum Subtype {
    IncorrectDlLibraryUsage,
    ShapeDimensionMismatch,
    IncorrectDlFunctionality,
    TensorTypeValueEdgeCase,
    ShapeDimensionEdgeCase,
    TensorShapeMismatch,
    IncorrectLibraryArguments,
    TypeMismatch,
    MissingUndefinedDlModule,
    IncorrectDlModuleUsage,
    WrongDlModuleImport,
    IncorrectApiUsage,
    DtypeCasting,
    ShapeErrorInOperation,
    IncorrectAlgebra,
    DlPerformance,
    NotDefiningDlLibrary,
    IncorrectTensorConstant,
    NotDlRelated,
}

impl Category {
    pub const ALL: &'static [Category] = &[
        Category::Misinterpretation,
        Category::SyntaxError,
        Category::SillyMistake,
        Category::PromptBiasedCode,
        Category::MissingCornerCase,
        Category::WrongInputType,
        Category::HallucinatedObject,
        Category::WrongAttribute,
        Category::NonPromptedConsideration,
        Category::OperationCalculationError,
        Category::PerformanceIssue,
        Category::PromptMissingInformation,
        Category::UndefinedReference,
        Category::ConstantValueError,
    ];

    /// The paper's name (Table 6).
    pub fn title(self) -> &'static str {
        match self {
            Category::Misinterpretation => "Misinterpretation",
            Category::SyntaxError => "Syntax Error",
            Category::SillyMistake => "Silly Mistake",
            Category::PromptBiasedCode => "Prompt-biased Code",
            Category::MissingCornerCase => "Missing Corner Case",
            Category::WrongInputType => "Wrong Input Type",
            Category::HallucinatedObject => "Hallucinated Object",
            Category::WrongAttribute => "Wrong Attribute",
            Category::NonPromptedConsideration => "Non-Prompted Consideration",
            Category::OperationCalculationError => "Operation/Calculation Error",
            Category::PerformanceIssue => "Performance Issue",
            Category::PromptMissingInformation => "Prompt Missing Information",
            Category::UndefinedReference => "Incorrect or Undefined Variable/Method References",
            Category::ConstantValueError => "Constant Value Error",
        }
    }

    /// The file format's spelling (`wrong_input_type`).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }
}

impl Subtype {
    pub const ALL: &'static [Subtype] = &[
        Subtype::IncorrectDlLibraryUsage,
        Subtype::ShapeDimensionMismatch,
        Subtype::IncorrectDlFunctionality,
        Subtype::TensorTypeValueEdgeCase,
        Subtype::ShapeDimensionEdgeCase,
        Subtype::TensorShapeMismatch,
        Subtype::IncorrectLibraryArguments,
        Subtype::TypeMismatch,
        Subtype::MissingUndefinedDlModule,
        Subtype::IncorrectDlModuleUsage,
        Subtype::WrongDlModuleImport,
        Subtype::IncorrectApiUsage,
        Subtype::DtypeCasting,
        Subtype::ShapeErrorInOperation,
        Subtype::IncorrectAlgebra,
        Subtype::DlPerformance,
        Subtype::NotDefiningDlLibrary,
        Subtype::IncorrectTensorConstant,
        Subtype::NotDlRelated,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Subtype::IncorrectDlLibraryUsage => "Incorrect DL library or framework usage",
            Subtype::ShapeDimensionMismatch => "Shape and dimension mismatch",
            Subtype::IncorrectDlFunctionality => "Incorrect DL/ML functionality",
            Subtype::TensorTypeValueEdgeCase => "Tensor type and value edge cases",
            Subtype::ShapeDimensionEdgeCase => "Shape and dimension edge cases",
            Subtype::TensorShapeMismatch => "Tensor shape mismatch",
            Subtype::IncorrectLibraryArguments => "Incorrect ML/DL function library arguments",
            Subtype::TypeMismatch => "Type mismatch problem",
            Subtype::MissingUndefinedDlModule => "Missing or undefined DL modules",
            Subtype::IncorrectDlModuleUsage => "Incorrect usage of DL modules",
            Subtype::WrongDlModuleImport => "Wrong DL module import",
            Subtype::IncorrectApiUsage => "Incorrect API usage",
            Subtype::DtypeCasting => "Data type casting issues",
            Subtype::ShapeErrorInOperation => "Shape and dimension errors in operations",
            Subtype::IncorrectAlgebra => "Incorrect algebraic calculations",
            Subtype::DlPerformance => "DL performance issue",
            Subtype::NotDefiningDlLibrary => "Not defining the correct DL library",
            Subtype::IncorrectTensorConstant => "Incorrect tensor constant value",
            Subtype::NotDlRelated => "Not DL-related",
        }
    }

    /// The category a DL subtype belongs to (`None` for "not DL-related", which any has).
    pub fn category(self) -> Option<Category> {
        use Category as C;
        use Subtype as S;
        Some(match self {
            S::IncorrectDlLibraryUsage
            | S::ShapeDimensionMismatch
            | S::IncorrectDlFunctionality => C::Misinterpretation,
            S::TensorTypeValueEdgeCase | S::ShapeDimensionEdgeCase => C::MissingCornerCase,
            S::TensorShapeMismatch | S::IncorrectLibraryArguments | S::TypeMismatch => {
                C::WrongInputType
            }
            S::MissingUndefinedDlModule | S::IncorrectDlModuleUsage => C::HallucinatedObject,
            S::WrongDlModuleImport | S::IncorrectApiUsage => C::WrongAttribute,
            S::DtypeCasting | S::ShapeErrorInOperation | S::IncorrectAlgebra => {
                C::OperationCalculationError
            }
            S::DlPerformance => C::PerformanceIssue,
            S::NotDefiningDlLibrary => C::PromptMissingInformation,
            S::IncorrectTensorConstant => C::ConstantValueError,
            S::NotDlRelated => return None,
        })
    }

    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }
}

/// `Operation/calculation error` -> `operation_calculation_error`: lowercase ASCII letters and
/// digits, every other run of characters one `_`.
fn normalize(s: &str) -> String {
    let mut out = String::new();
    for c in s.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// The paper's (and the reference notes') wordings of subtypes that differ from [`Subtype::title`].
const SUBTYPE_ALIASES: &[(&str, Subtype)] = &[
    (
        "incorrect DL library usage",
        Subtype::IncorrectDlLibraryUsage,
    ),
    (
        "incorrect DL framework usage",
        Subtype::IncorrectDlLibraryUsage,
    ),
    (
        "incorrect DL functionality",
        Subtype::IncorrectDlFunctionality,
    ),
    (
        "incorrect ML functionality",
        Subtype::IncorrectDlFunctionality,
    ),
    (
        "tensor type/value edge cases",
        Subtype::TensorTypeValueEdgeCase,
    ),
    (
        "tensor type/value edge case",
        Subtype::TensorTypeValueEdgeCase,
    ),
    (
        "shape/dimension edge cases",
        Subtype::ShapeDimensionEdgeCase,
    ),
    ("shape/dimension edge case", Subtype::ShapeDimensionEdgeCase),
    (
        "incorrect DL library arguments",
        Subtype::IncorrectLibraryArguments,
    ),
    (
        "incorrect DL function library arguments",
        Subtype::IncorrectLibraryArguments,
    ),
    ("type mismatch", Subtype::TypeMismatch),
    (
        "missing/undefined DL modules",
        Subtype::MissingUndefinedDlModule,
    ),
    ("dtype casting", Subtype::DtypeCasting),
    ("dtype casting issues", Subtype::DtypeCasting),
    ("shape errors in operations", Subtype::ShapeErrorInOperation),
    (
        "shape and dimension errors in operation",
        Subtype::ShapeErrorInOperation,
    ),
    ("incorrect algebra", Subtype::IncorrectAlgebra),
    ("incorrect algebraic calculation", Subtype::IncorrectAlgebra),
    ("performance issue", Subtype::DlPerformance),
    (
        "incorrect tensor constant",
        Subtype::IncorrectTensorConstant,
    ),
    ("not DL related", Subtype::NotDlRelated),
    // The paper's appendix E and Table 6 spell some subtypes differently from each other.
    (
        "shape and dimension error in operations",
        Subtype::ShapeErrorInOperation,
    ),
    ("DL performance issues", Subtype::DlPerformance),
    (
        "not defining the correct DL library in the prompt",
        Subtype::NotDefiningDlLibrary,
    ),
    (
        "not defining correct DL library",
        Subtype::NotDefiningDlLibrary,
    ),
];

/// The paper's wordings of categories that differ from [`Category::title`].
const CATEGORY_ALIASES: &[(&str, Category)] = &[
    ("undefined reference", Category::UndefinedReference),
    (
        "incorrect or undefined variable references",
        Category::UndefinedReference,
    ),
    (
        "incorrect or undefined method references",
        Category::UndefinedReference,
    ),
    ("operation error", Category::OperationCalculationError),
    ("calculation error", Category::OperationCalculationError),
    // Appendix E's "Missing Corner Cases" and Table 6's "Hallucinated Objects".
    ("missing corner cases", Category::MissingCornerCase),
    ("hallucinated objects", Category::HallucinatedObject),
];

impl Category {
    /// The category named by `s`: its internal name (`wrong_input_type`) or Deep-Bench's title
    /// (`Wrong Input Type`, `Operation/calculation error`, `Incorrect or Undefined
    /// Variable/Method References`), ignoring case, spaces and punctuation.
    pub fn parse(s: &str) -> Option<Category> {
        let n = normalize(s);
        Category::ALL
            .iter()
            .copied()
            .find(|c| n == c.name() || n == normalize(c.title()))
            .or_else(|| {
                CATEGORY_ALIASES
                    .iter()
                    .find(|(a, _)| normalize(a) == n)
                    .map(|(_, c)| *c)
            })
    }
}

impl Subtype {
    /// The subtype named by `s`: its internal name, its title, or the paper's wording
    /// (`shape/dimension edge cases`, `dtype casting`), ignoring case, spaces and punctuation.
    pub fn parse(s: &str) -> Option<Subtype> {
        let n = normalize(s);
        Subtype::ALL
            .iter()
            .copied()
            .find(|t| n == t.name() || n == normalize(t.title()))
            .or_else(|| {
                SUBTYPE_ALIASES
                    .iter()
                    .find(|(a, _)| normalize(a) == n)
                    .map(|(_, t)| *t)
            })
    }
}

impl TryFrom<String> for Category {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Category::parse(&s).ok_or_else(|| format!("unknown failure category {s:?}"))
    }
}

impl TryFrom<String> for Subtype {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Subtype::parse(&s).ok_or_else(|| format!("unknown failure subtype {s:?}"))
    }
}

/// The label a wrong answer is expected to get (a generations file's `expected_label`): a
/// category, and optionally its subtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExpectedLabel {
    pub category: Category,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<Subtype>,
}

impl ExpectedLabel {
    /// Whether `label` agrees: the same category, and the same subtype when one is expected.
    pub fn agrees(&self, label: &Label) -> bool {
        self.category == label.category && self.subtype.is_none_or(|s| s == label.subtype)
    }
}

/// Who assigned a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelSource {
    Rules,
    Llm,
}

/// A failure's place in the taxonomy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    pub category: Category,
    pub subtype: Subtype,
    /// The id of the rule that fired (`fallback` for the catch-all).
    pub rule: String,
    pub source: LabelSource,
    /// What a behaviour rule saw (`behaviour_*` rules): the difference between the generated
    /// and the reference function on the failing test's call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// What the generated function did next to the reference on a failing test's calls: the
/// finding of `reprolab.codegen_behaviour` (the pytest plugin runs both functions on a copy
/// of each call's arguments, with the same random state, and compares).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Behaviour {
    /// `same`, `candidate_raises`, `reference_raises`, `both_raise`, `type`, `shape`, `dtype`,
    /// `nan`, `values`, `side_effect`, or `unavailable` (the comparison itself failed).
    pub finding: String,
    /// The call compared (0-based) and how many the test made.
    pub call: Option<u32>,
    pub calls: Option<u32>,
    /// For a class entry point, the method of the instance whose call differed (`forward`);
    /// `None` for the construction or a function's call.
    pub method: Option<String>,
    /// What each function returned or raised.
    pub candidate: Option<String>,
    pub reference: Option<String>,
    /// The candidate's line that raised and the call it made.
    pub raised_at: Option<String>,
    /// `shape`: the candidate's shape is a broadcast of the reference's.
    pub broadcast: bool,
    /// `shape`: one output is the other with one element or slice more at the start or the end
    /// of one axis, the rest equal (a count or a loop bound off by one).
    pub off_by_one: bool,
    /// `values`: the largest difference relative to the reference's scale, the share of
    /// mismatched elements, their correlation, a constant ratio, the same values elsewhere, and
    /// whether they are close (relative error < 0.5, correlation > 0.9).
    pub rel_error: Option<f64>,
    pub mismatched: Option<f64>,
    pub corr: Option<f64>,
    pub ratio: Option<f64>,
    pub permuted: bool,
    /// `values`, `permuted`: the values are laid out in another order that is neither whole rows
    /// (last-axis vectors) reordered, nor values reordered within each row, nor the reference
    /// with its axes transposed: what a reshape or view does where a permute belongs.
    pub layout: bool,
    pub close: bool,
    /// `values`: the one value the reference puts wherever the two differ (-1, 0, NaN).
    pub sentinel: Option<String>,
    /// An early exit (`if` … `return`/`raise`) the reference took on this input.
    pub guard: Option<String>,
    /// Edge features of the input: `empty`, `nan_or_inf`, `constant_column`, `ties`, `large_values`.
    pub edge: Vec<String>,
    /// Arguments the call passed that the reference reads and the candidate never reads.
    pub ignored_args: Vec<String>,
    /// A library call both make with a keyword argument set differently.
    pub library_args: Vec<String>,
    pub side_effect: Option<String>,
    pub note: Option<String>,
}

impl Behaviour {
    /// Whether the comparison says something (the two differed, or an argument is ignored).
    pub fn is_informative(&self) -> bool {
        !matches!(self.finding.as_str(), "same" | "unavailable" | "")
            || !self.ignored_args.is_empty()
    }

    /// One line for the report.
    pub fn summary(&self) -> String {
        let mut parts = vec![self.finding.clone()];
        if let Some(c) = self.call {
            parts.push(format!("call {}", c + 1));
        }
        if let Some(m) = &self.method {
            parts.push(format!("method {m}"));
        }
        if let Some(c) = &self.candidate {
            parts.push(format!("generated: {c}"));
        }
        if let Some(r) = &self.reference {
            parts.push(format!("reference: {r}"));
        }
        if let Some(w) = &self.raised_at {
            parts.push(format!("raised at {w}"));
        }
        if let Some(x) = self.rel_error {
            parts.push(format!("relative error {x:.3}"));
        }
        if let Some(x) = self.ratio {
            parts.push(format!("ratio {x:.4}"));
        }
        if self.off_by_one {
            parts.push("one element more or fewer at an end, the rest equal".into());
        }
        if self.layout {
            parts.push("same values, laid out in another order (not rows, not a transpose)".into());
        } else if self.permuted {
            parts.push("same values, other places".into());
        }
        if let Some(s) = &self.sentinel {
            parts.push(format!("reference puts {s} where they differ"));
        }
        if let Some(g) = &self.guard {
            parts.push(format!("reference took `if {g}`"));
        }
        if !self.edge.is_empty() {
            parts.push(format!("input: {}", self.edge.join(", ")));
        }
        if !self.ignored_args.is_empty() {
            parts.push(format!("never reads {}", self.ignored_args.join(", ")));
        }
        if !self.library_args.is_empty() {
            parts.push(format!("library call {}", self.library_args.join(", ")));
        }
        if let Some(s) = &self.side_effect {
            parts.push(s.clone());
        }
        parts.join("; ")
    }
}

/// The behaviour rules, in the order they are tried, with their label (documentation; the
/// logic is [`behaviour_rule`]).
pub const BEHAVIOUR_RULES: &[(&str, Category, Subtype, &str)] = &[
    (
        "behaviour_ignored_argument",
        Category::Misinterpretation,
        Subtype::IncorrectDlFunctionality,
        "the call passes an argument the reference reads and the generation never reads",
    ),
    (
        "behaviour_library_arguments",
        Category::WrongInputType,
        Subtype::IncorrectLibraryArguments,
        "results differ and both call a library function with a keyword argument set differently",
    ),
    (
        "behaviour_reference_raises",
        Category::MissingCornerCase,
        Subtype::NotDlRelated,
        "the reference rejects the input (raises), the generation returns",
    ),
    (
        "behaviour_both_raise",
        Category::MissingCornerCase,
        Subtype::ShapeDimensionEdgeCase,
        "both raise, differently: the reference checks the input, the generation fails inside",
    ),
    (
        "behaviour_nan",
        Category::MissingCornerCase,
        Subtype::TensorTypeValueEdgeCase,
        "the generation returns NaN or inf where the reference's output is finite",
    ),
    (
        "behaviour_empty_input",
        Category::MissingCornerCase,
        Subtype::ShapeDimensionEdgeCase,
        "the generation raises on an empty input the reference handles",
    ),
    (
        "behaviour_type",
        Category::Misinterpretation,
        Subtype::IncorrectDlLibraryUsage,
        "the outputs differ in kind (tensor, array, number, list, keys, a module's parameters)",
    ),
    (
        "behaviour_off_by_one",
        Category::SillyMistake,
        Subtype::NotDlRelated,
        "the output is the reference's with one element or slice more or fewer at an end, the rest equal (off by one)",
    ),
    (
        "behaviour_shape_broadcast",
        Category::OperationCalculationError,
        Subtype::ShapeErrorInOperation,
        "the generation's shape is a broadcast of the reference's",
    ),
    (
        "behaviour_shape",
        Category::Misinterpretation,
        Subtype::ShapeDimensionMismatch,
        "the output shapes (or lengths) differ",
    ),
    (
        "behaviour_dtype",
        Category::OperationCalculationError,
        Subtype::DtypeCasting,
        "the same values in another dtype",
    ),
    (
        "behaviour_side_effect",
        Category::Misinterpretation,
        Subtype::IncorrectDlFunctionality,
        "the same output, but the arguments (a model's mode, parameters, flags) end up different",
    ),
    (
        "behaviour_sentinel",
        Category::MissingCornerCase,
        Subtype::TensorTypeValueEdgeCase,
        "the reference puts one special value (-1, 0, NaN) where the generation computes ordinary values",
    ),
    (
        "behaviour_layout",
        Category::OperationCalculationError,
        Subtype::ShapeErrorInOperation,
        "the same values laid out in another order, not a reordering of rows nor a transpose (a reshape where a permute belongs)",
    ),
    (
        "behaviour_permuted",
        Category::Misinterpretation,
        Subtype::IncorrectDlFunctionality,
        "the same values in other places (transposed, reordered)",
    ),
    (
        "behaviour_scaled",
        Category::OperationCalculationError,
        Subtype::IncorrectAlgebra,
        "the output is the reference's times a constant",
    ),
    (
        "behaviour_close",
        Category::OperationCalculationError,
        Subtype::IncorrectAlgebra,
        "close values (relative error < 0.5, correlation > 0.9): a formula slightly off",
    ),
    (
        "behaviour_values",
        Category::Misinterpretation,
        Subtype::IncorrectDlFunctionality,
        "far-off values: the generation computes something else",
    ),
];

/// The behaviour rule that matches a failed test's finding, if any; `None` leaves the failure
/// to the evidence rules (an exception the candidate alone raised, or no difference found).
pub fn behaviour_rule(b: &Behaviour) -> Option<&'static str> {
    let f = b.finding.as_str();
    let differs = !matches!(f, "same" | "unavailable" | "");
    let id = if !b.ignored_args.is_empty() {
        "behaviour_ignored_argument"
    } else if !differs {
        return None;
    } else if !b.library_args.is_empty() && matches!(f, "values" | "type" | "shape" | "dtype") {
        "behaviour_library_arguments"
    } else {
        match f {
            "reference_raises" => "behaviour_reference_raises",
            "both_raise" => "behaviour_both_raise",
            "nan" => "behaviour_nan",
            "candidate_raises" if b.edge.iter().any(|e| e == "empty") => "behaviour_empty_input",
            "candidate_raises" => return None,
            "type" => "behaviour_type",
            "shape" if b.off_by_one => "behaviour_off_by_one",
            "shape" if b.broadcast => "behaviour_shape_broadcast",
            "shape" => "behaviour_shape",
            "dtype" => "behaviour_dtype",
            "side_effect" => "behaviour_side_effect",
            "values" if b.sentinel.is_some() => "behaviour_sentinel",
            "values" if b.permuted && b.layout => "behaviour_layout",
            "values" if b.permuted => "behaviour_permuted",
            "values" if b.ratio.is_some_and(|r| (r - 1.0).abs() > 1e-6) && !b.close => {
                "behaviour_scaled"
            }
            "values" if b.close => "behaviour_close",
            "values" => "behaviour_values",
            _ => return None,
        }
    };
    Some(id)
}

fn behaviour_label(b: &Behaviour) -> Option<Label> {
    let id = behaviour_rule(b)?;
    let &(_, category, mut subtype, _) = BEHAVIOUR_RULES.iter().find(|r| r.0 == id)?;
    if id == "behaviour_reference_raises" || id == "behaviour_both_raise" {
        // the edge the reference guards against: an empty or odd-sized input, or values
        let text = format!(
            "{} {}",
            b.candidate.as_deref().unwrap_or(""),
            b.reference.as_deref().unwrap_or("")
        );
        subtype = if b.edge.iter().any(|e| e == "empty")
            || Regex::new(r"(?i)size|shape|dimension|length|divisible|empty")
                .is_ok_and(|r| r.is_match(&text))
        {
            Subtype::ShapeDimensionEdgeCase
        } else if b.edge.is_empty() {
            Subtype::NotDlRelated
        } else {
            Subtype::TensorTypeValueEdgeCase
        };
    }
    Some(Label {
        category,
        subtype,
        rule: id.to_string(),
        source: LabelSource::Rules,
        evidence: Some(b.summary()),
    })
}

/// What a failed sample left behind.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub status: Status,
    /// The exception type, possibly qualified (`numpy.exceptions.AxisError`).
    pub kind: &'a str,
    pub message: &'a str,
    pub traceback: &'a str,
    /// The comparison with the reference on the failing test's calls (function tasks).
    pub behaviour: Option<&'a Behaviour>,
}

struct Rule {
    id: &'static str,
    /// Only for samples with this status (any status when `None`).
    status: Option<Status>,
    /// Exception types (last dotted component); empty matches any.
    kinds: &'static [&'static str],
    message: Option<&'static str>,
    traceback: Option<&'static str>,
    category: Category,
    subtype: Subtype,
}

struct Compiled {
    rule: &'static Rule,
    message: Option<Regex>,
    traceback: Option<Regex>,
}

use Category as C;
use Subtype as S;

const ASSERT: &[&str] = &["AssertionError"];
const LIB_FRAMES: &str = r"site-packages/(torch|numpy|sklearn|scipy|torchvision)/";
const DL_FRAMEWORKS: &str =
    r"No module named '(tensorflow|keras|tf_keras|jax|jaxlib|flax|mxnet|paddle|theano|caffe2?)\b";
const DL_LIBS_UNAVAILABLE: &str = r"No module named '(transformers|timm|torchmetrics|torchtext|torchaudio|torchvision|cv2|PIL|einops|lightning|pytorch_lightning|albumentations|skimage|pandas|tensorboard|onnx)\b";
const DL_NAMES: &str = r"name '(torch|nn|F|np|numpy|optim|tf|sklearn|scipy|Tensor|DataLoader|Dataset|TensorDataset|init)' is not defined";

macro_rules! rule {
    ($id:literal, $status:expr, $kinds:expr, $msg:expr, $tb:expr, $cat:expr, $sub:expr) => {
        Rule {
            id: $id,
            status: $status,
            kinds: $kinds,
            message: $msg,
            traceback: $tb,
            category: $cat,
            subtype: $sub,
        }
    };
}

/// The rule table, in the order the rules are tried.
static RULES: &[Rule] = &[
    // --- what the watchdog or the harness saw
    rule!(
        "timeout",
        Some(Status::Timeout),
        &[],
        None,
        None,
        C::PerformanceIssue,
        S::NotDlRelated
    ),
    rule!(
        "memory",
        Some(Status::Oom),
        &[],
        None,
        None,
        C::PerformanceIssue,
        S::DlPerformance
    ),
    rule!(
        "output_flood",
        Some(Status::OutputLimit),
        &[],
        None,
        None,
        C::NonPromptedConsideration,
        S::NotDlRelated
    ),
    rule!(
        "disk_flood",
        Some(Status::DiskLimit),
        &[],
        None,
        None,
        C::NonPromptedConsideration,
        S::NotDlRelated
    ),
    rule!(
        "no_definition",
        Some(Status::PatchError),
        &["NoDefinition"],
        None,
        None,
        C::Misinterpretation,
        S::NotDlRelated
    ),
    // --- syntax
    rule!(
        "syntax",
        None,
        &["SyntaxError", "IndentationError", "TabError"],
        None,
        None,
        C::SyntaxError,
        S::NotDlRelated
    ),
    // --- the GPU where there is none (torch raises some of these as AssertionError)
    rule!(
        "device",
        None,
        &[],
        Some(
            r"Torch not compiled with CUDA|NVIDIA driver|CUDA error|cuda runtime error|Expected all tensors to be on the same device|MPS backend"
        ),
        None,
        C::NonPromptedConsideration,
        S::NotDlRelated
    ),
    // --- test assertions, by what they compare
    rule!(
        "pytest_did_not_raise",
        None,
        &["Failed"],
        Some(r"DID NOT (RAISE|WARN)"),
        None,
        C::MissingCornerCase,
        S::NotDlRelated
    ),
    rule!(
        "assert_library_type",
        None,
        ASSERT,
        Some(r"isinstance\(.*(Tensor|ndarray|array)|Tensor'>|ndarray'>"),
        None,
        C::Misinterpretation,
        S::IncorrectDlLibraryUsage
    ),
    rule!(
        "assert_shape",
        None,
        ASSERT,
        Some(
            r"torch\.Size\(|\.shape\b|attribute 'shape'|\.size\(\)|\.ndim\b|\.dim\(\)|shapes? .*mismatch"
        ),
        None,
        C::Misinterpretation,
        S::ShapeDimensionMismatch
    ),
    rule!(
        "assert_nan",
        None,
        ASSERT,
        Some(r"(?i)\bnan\b|isnan|isfinite|\binf\b"),
        None,
        C::MissingCornerCase,
        S::TensorTypeValueEdgeCase
    ),
    rule!(
        "assert_close",
        None,
        ASSERT,
        Some(
            r"not close|Not equal to tolerance|not almost equal|Mismatched elements|allclose|isclose|approx|±|Greatest (absolute|relative) difference"
        ),
        None,
        C::OperationCalculationError,
        S::IncorrectAlgebra
    ),
    rule!(
        "assert_dtype",
        None,
        ASSERT,
        Some(
            r"\.dtype\b|attribute 'dtype'|assert (torch|np|numpy)\.\w+ [=!]= (torch|np|numpy)\.\w+|dtype\('\w+'\) [=!]="
        ),
        None,
        C::OperationCalculationError,
        S::DtypeCasting
    ),
    rule!(
        "assert_none",
        None,
        ASSERT,
        Some(r"\bNone\b"),
        None,
        C::Misinterpretation,
        S::NotDlRelated
    ),
    rule!(
        "assert_number",
        None,
        ASSERT,
        Some(r"assert -?\d+(\.\d+)?(e-?\d+)? [=!<>]=? -?\d"),
        None,
        C::OperationCalculationError,
        S::IncorrectAlgebra
    ),
    rule!(
        "assert_other",
        None,
        ASSERT,
        None,
        None,
        C::Misinterpretation,
        S::IncorrectDlFunctionality
    ),
    // --- DL error messages, whatever the exception type
    rule!(
        "state_dict",
        None,
        &[],
        Some(
            r"Missing key\(s\) in state_dict|Unexpected key\(s\) in state_dict|size mismatch for \w"
        ),
        None,
        C::Misinterpretation,
        S::IncorrectDlFunctionality
    ),
    rule!(
        "autograd",
        None,
        &[],
        Some(
            r"does not require grad and does not have a grad_fn|backward through the graph a second time|leaf Variable that requires grad|modified by an inplace operation|Can't call numpy\(\) on Tensor that requires grad|grad can be implicitly created only for scalar"
        ),
        None,
        C::WrongAttribute,
        S::IncorrectApiUsage
    ),
    rule!(
        "network",
        None,
        &[],
        Some(
            r"Network is unreachable|Temporary failure in name resolution|Name or service not known|getaddrinfo failed|urlopen error|Connection refused|No route to host"
        ),
        None,
        C::NonPromptedConsideration,
        S::NotDlRelated
    ),
    rule!(
        "input_shape",
        None,
        &[],
        Some(
            r"Expected \d+-?D .{0,40}input|expected input\[.*\] to have \d+ channels|Given groups=\d+, weight of size|Expected input batch_size|Target size \(.*\) must be the same as input size|Expected 2D array, got (1D|scalar) array|Found input variables with inconsistent numbers of samples|input\.size\(-1\) must be equal to input_size|Expected target size|only batches of spatial targets supported|Expected (input|target) .* to have"
        ),
        None,
        C::WrongInputType,
        S::TensorShapeMismatch
    ),
    rule!(
        "operation_shape",
        None,
        &[],
        Some(
            r"mat1 and mat2 shapes cannot be multiplied|size mismatch|must match the size of tensor b|operands could not be broadcast together|shapes \(.*\) and \(.*\) not aligned|matmul: Input operand|Inconsistent shapes|incompatible dimensions|mismatch in dimension|The expanded size of the tensor|inconsistent tensor size|Sizes of tensors must match|to have the same (size|shape)|shape mismatch"
        ),
        None,
        C::OperationCalculationError,
        S::ShapeErrorInOperation
    ),
    rule!(
        "empty_or_tiny_input",
        None,
        &[],
        Some(
            r"Expected more than 1 value per channel|zero-size array|cannot be empty|reshape tensor of 0 elements|on tensor with no elements|with no elements|Input tensor is empty|empty tensor|arg is an empty sequence|empty sequence"
        ),
        None,
        C::MissingCornerCase,
        S::ShapeDimensionEdgeCase
    ),
    rule!(
        "reshape_or_axis",
        None,
        &[],
        Some(
            r"shape '\[.*\]' is invalid for input of size|cannot reshape array of size|view size is not compatible|Dimension out of range|axis -?\d+ is out of bounds for array of dimension|too many indices for (tensor|array)|number of dims don't match|number of dimensions in the tensor input does not match"
        ),
        None,
        C::Misinterpretation,
        S::ShapeDimensionMismatch
    ),
    rule!(
        "axis_error",
        None,
        &["AxisError"],
        None,
        None,
        C::Misinterpretation,
        S::ShapeDimensionMismatch
    ),
    rule!(
        "dtype_cast",
        None,
        &[],
        Some(
            r"can't be cast to the desired output type|Cannot cast array data|casting rule|cannot safely cast|UFuncTypeError|Cannot cast ufunc"
        ),
        None,
        C::OperationCalculationError,
        S::DtypeCasting
    ),
    rule!(
        "dtype_mismatch",
        None,
        &[],
        Some(
            r"expected scalar type \w+ but found \w+|must have the same dtype|to have the same dtype|Found dtype \w+ but expected \w+|tensors used as indices must be long|only integers, slices|expected dtype|dtype mismatch|should be the same dtype|must be a floating point|is not a floating point|Expected floating point type|expected (a )?(Float|Long|Double|Int) tensor"
        ),
        None,
        C::WrongInputType,
        S::TypeMismatch
    ),
    rule!(
        "dtype_unsupported",
        None,
        &[],
        Some(
            r"not implemented for '\w+'|could not infer output dtype|Input dtype must be either a floating point"
        ),
        None,
        C::MissingCornerCase,
        S::TensorTypeValueEdgeCase
    ),
    rule!(
        "nan_input",
        None,
        &[],
        Some(r"(?i)input contains (nan|infinity)|contains nan|is not finite|nan values"),
        None,
        C::MissingCornerCase,
        S::TensorTypeValueEdgeCase
    ),
    // --- imports and names
    rule!(
        "wrong_framework_import",
        None,
        &["ModuleNotFoundError", "ImportError"],
        Some(DL_FRAMEWORKS),
        None,
        C::WrongAttribute,
        S::WrongDlModuleImport
    ),
    rule!(
        "dl_submodule_missing",
        None,
        &["ModuleNotFoundError"],
        Some(r"No module named '(torch|numpy|sklearn|scipy)\."),
        None,
        C::HallucinatedObject,
        S::IncorrectDlModuleUsage
    ),
    rule!(
        "unavailable_dl_library",
        None,
        &["ModuleNotFoundError", "ImportError"],
        Some(DL_LIBS_UNAVAILABLE),
        None,
        C::Misinterpretation,
        S::IncorrectDlLibraryUsage
    ),
    rule!(
        "dl_import_missing_name",
        None,
        &["ImportError"],
        Some(r"cannot import name '[^']+' from '(torch|numpy|sklearn|scipy|torchvision)\b"),
        None,
        C::HallucinatedObject,
        S::IncorrectDlModuleUsage
    ),
    rule!(
        "import_other",
        None,
        &["ModuleNotFoundError", "ImportError"],
        None,
        None,
        C::HallucinatedObject,
        S::NotDlRelated
    ),
    rule!(
        "dl_module_attribute",
        None,
        &["AttributeError"],
        Some(r"module '(torch|numpy|sklearn|scipy|torchvision)[\w.]*' has no attribute"),
        None,
        C::HallucinatedObject,
        S::IncorrectDlModuleUsage
    ),
    rule!(
        "undefined_layer",
        None,
        &["AttributeError"],
        Some(r"'\w+' object has no attribute"),
        Some(r"torch/nn/modules/module\.py.*__getattr__"),
        C::HallucinatedObject,
        S::MissingUndefinedDlModule
    ),
    rule!(
        "tensor_attribute",
        None,
        &["AttributeError"],
        Some(
            r"'(\w*Tensor|ndarray|numpy\.ndarray|Parameter|Module|Sequential|Linear|Conv[123]d|BatchNorm[123]d|LSTM|GRU|Embedding|DataLoader|Dataset|Adam|SGD|Optimizer|\w*Loss|\w+Scheduler|generator)' object has no attribute"
        ),
        None,
        C::WrongAttribute,
        S::IncorrectApiUsage
    ),
    rule!(
        "none_attribute",
        None,
        &["AttributeError"],
        Some(r"'NoneType' object has no attribute"),
        None,
        C::Misinterpretation,
        S::NotDlRelated
    ),
    rule!(
        "attribute_other",
        None,
        &["AttributeError"],
        None,
        None,
        C::WrongAttribute,
        S::NotDlRelated
    ),
    rule!(
        "dl_name_undefined",
        None,
        &["NameError"],
        Some(DL_NAMES),
        None,
        C::HallucinatedObject,
        S::MissingUndefinedDlModule
    ),
    rule!(
        "name_undefined",
        None,
        &["NameError", "UnboundLocalError"],
        None,
        None,
        C::UndefinedReference,
        S::NotDlRelated
    ),
    // --- per exception type
    rule!(
        "invalid_library_arguments",
        None,
        &["TypeError"],
        Some(r"received an invalid combination of arguments"),
        None,
        C::WrongInputType,
        S::IncorrectLibraryArguments
    ),
    rule!(
        "type_mismatch",
        None,
        &["TypeError"],
        Some(
            r"must be Tensor, not|expected Tensor as element|unsupported operand type|can't multiply sequence|not supported between instances|can't convert|object is not (iterable|subscriptable|callable)|has no len\(\)|must be real number|only (one|integer) element tensors|can only concatenate|must be \w+, not \w+|unhashable type|cannot be interpreted as an integer"
        ),
        None,
        C::WrongInputType,
        S::TypeMismatch
    ),
    rule!(
        "library_call_arguments",
        None,
        &["TypeError"],
        Some(
            r"unexpected keyword argument|required positional argument|positional arguments? but \d+ (were|was) given|got multiple values for argument|takes from \d+ to \d+ positional"
        ),
        Some(LIB_FRAMES),
        C::WrongInputType,
        S::IncorrectLibraryArguments
    ),
    rule!(
        "signature_differs",
        None,
        &["TypeError"],
        Some(
            r"unexpected keyword argument|required positional argument|positional arguments? but \d+ (were|was) given|got multiple values for argument|takes from \d+ to \d+ positional"
        ),
        None,
        C::Misinterpretation,
        S::NotDlRelated
    ),
    rule!(
        "type_other",
        None,
        &["TypeError"],
        None,
        None,
        C::WrongInputType,
        S::NotDlRelated
    ),
    rule!(
        "unpack",
        None,
        &["ValueError"],
        Some(r"too many values to unpack|not enough values to unpack"),
        None,
        C::Misinterpretation,
        S::ShapeDimensionMismatch
    ),
    rule!(
        "conversion",
        None,
        &["ValueError"],
        Some(r"could not convert|invalid literal"),
        None,
        C::WrongInputType,
        S::NotDlRelated
    ),
    rule!(
        "math_domain",
        None,
        &["ValueError"],
        Some(r"math domain error"),
        None,
        C::OperationCalculationError,
        S::NotDlRelated
    ),
    rule!(
        "library_value_error",
        None,
        &["ValueError"],
        None,
        Some(LIB_FRAMES),
        C::WrongInputType,
        S::IncorrectLibraryArguments
    ),
    rule!(
        "value_other",
        None,
        &["ValueError"],
        None,
        None,
        C::Misinterpretation,
        S::NotDlRelated
    ),
    rule!(
        "index_dimension",
        None,
        &["IndexError"],
        Some(r"dimension|for (tensor|array)|size \d+"),
        None,
        C::MissingCornerCase,
        S::ShapeDimensionEdgeCase
    ),
    rule!(
        "index_other",
        None,
        &["IndexError"],
        None,
        None,
        C::MissingCornerCase,
        S::NotDlRelated
    ),
    rule!(
        "division_by_zero",
        None,
        &["ZeroDivisionError", "FloatingPointError"],
        None,
        None,
        C::MissingCornerCase,
        S::NotDlRelated
    ),
    rule!(
        "not_implemented",
        None,
        &["NotImplementedError"],
        None,
        None,
        C::Misinterpretation,
        S::IncorrectDlFunctionality
    ),
    rule!(
        "recursion",
        None,
        &["RecursionError"],
        None,
        None,
        C::SillyMistake,
        S::NotDlRelated
    ),
    rule!(
        "key_error",
        None,
        &["KeyError"],
        None,
        None,
        C::UndefinedReference,
        S::NotDlRelated
    ),
    rule!(
        "file_not_found",
        None,
        &["FileNotFoundError"],
        None,
        None,
        C::PromptMissingInformation,
        S::NotDlRelated
    ),
    rule!(
        "memory_error",
        None,
        &["MemoryError", "OutOfMemoryError"],
        None,
        None,
        C::PerformanceIssue,
        S::DlPerformance
    ),
    rule!(
        "runtime_other",
        None,
        &["RuntimeError"],
        None,
        None,
        C::WrongAttribute,
        S::IncorrectApiUsage
    ),
    // --- catch-all
    rule!(
        "fallback",
        None,
        &[],
        None,
        None,
        C::Misinterpretation,
        S::NotDlRelated
    ),
];

static COMPILED: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|rule| Compiled {
            rule,
            message: rule
                .message
                .map(|m| Regex::new(m).expect("valid rule regex")),
            traceback: rule
                .traceback
                .map(|t| Regex::new(t).expect("valid rule regex")),
        })
        .collect()
});

/// Statuses whose samples are failures of the generated code (and get a label).
pub fn is_failure(status: Status) -> bool {
    matches!(
        status,
        Status::Fail
            | Status::Error
            | Status::Timeout
            | Status::Oom
            | Status::OutputLimit
            | Status::DiskLimit
            | Status::PatchError
    )
}

/// Label a failure by the first rule that matches; `None` for samples that did not fail
/// (passed, no code, infrastructure errors).
pub fn classify(e: &Evidence) -> Option<Label> {
    if !is_failure(e.status) {
        return None;
    }
    let short = e.kind.rsplit('.').next().unwrap_or(e.kind);
    // What the code did comes first, for a failed test; statuses and syntax errors keep their
    // rules (a sample with status `fail` has neither).
    if e.status == Status::Fail
        && let Some(label) = e.behaviour.and_then(behaviour_label)
    {
        return Some(label);
    }
    COMPILED.iter().find_map(|c| {
        let r = c.rule;
        let hit = r.status.is_none_or(|s| s == e.status)
            && (r.kinds.is_empty() || r.kinds.contains(&short))
            && c.message.as_ref().is_none_or(|m| m.is_match(e.message))
            && c.traceback.as_ref().is_none_or(|t| t.is_match(e.traceback));
        hit.then(|| Label {
            category: r.category,
            subtype: r.subtype,
            rule: r.id.to_string(),
            source: LabelSource::Rules,
            evidence: None,
        })
    })
}

/// The ids of every rule, in order (for documentation and coverage checks).
pub fn rule_ids() -> Vec<&'static str> {
    RULES.iter().map(|r| r.id).collect()
}

/// A model that answers a classification prompt with text (wired to an LLM by the binary;
/// [`crate::refine`] asks it about every failed sample).
#[async_trait]
pub trait FailureClassifier: Send + Sync {
    async fn classify(&self, prompt: &str) -> Result<String, crate::generate::ModelError>;
    /// Names the model: recorded with each answer and part of the key answers are stored under.
    fn name(&self) -> String;
}

/// The prompt that asks a model to label one failure, given the rules' guess.
pub fn refine_prompt(task_prompt: &str, code: &str, e: &Evidence, guess: &Label) -> String {
    let categories: Vec<String> = Category::ALL
        .iter()
        .map(|c| format!("- {} ({})", c.name(), c.title()))
        .collect();
    let subtypes: Vec<String> = Subtype::ALL
        .iter()
        .map(|s| {
            format!(
                "- {} ({}; category {})",
                s.name(),
                s.title(),
                s.category().map_or("any".into(), |c| c.name())
            )
        })
        .collect();
    let cut = |s: &str, n: usize| -> String { s.chars().take(n).collect() };
    format!(
        "Classify why this LLM-generated deep-learning code failed its tests, using the taxonomy \
of Deep-Bench.\n\nCategories:\n{}\n\nSubtypes:\n{}\n\n## Task prompt\n{}\n\n## Generated code\n```python\n{}\n```\n\n\
## Evidence\nstatus: {}\nexception: {}\nmessage: {}\ntraceback (end):\n{}\n\n\
A rule-based classifier guessed category `{}`, subtype `{}`.\n\
Answer with one JSON object and nothing else: {{\"category\": \"...\", \"subtype\": \"...\"}}",
        categories.join("\n"),
        subtypes.join("\n"),
        cut(task_prompt, 4000),
        cut(code, 6000),
        e.status.name(),
        e.kind,
        cut(e.message, 1500),
        cut(e.traceback, 2000),
        guess.category.name(),
        guess.subtype.name(),
    )
}

/// The label in a model's answer: the first JSON object with a valid category and a subtype
/// that belongs to it (or is not DL-related). `None` when the answer has no such object.
pub fn parse_refinement(answer: &str) -> Option<(Category, Subtype)> {
    let mut rest = answer;
    while let Some(start) = rest.find('{') {
        let tail = &rest[start..];
        let mut stream = serde_json::Deserializer::from_str(tail).into_iter::<serde_json::Value>();
        if let Some(Ok(v)) = stream.next() {
            let cat: Option<Category> = serde_json::from_value(v["category"].clone()).ok();
            let sub: Option<Subtype> = serde_json::from_value(v["subtype"].clone()).ok();
            if let (Some(c), Some(s)) = (cat, sub)
                && s.category().is_none_or(|sc| sc == c)
            {
                return Some((c, s));
            }
        }
        rest = &tail[1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(kind: &str, message: &str) -> Evidence<'static> {
        Evidence {
            status: Status::Fail,
            kind: Box::leak(kind.to_string().into_boxed_str()),
            message: Box::leak(message.to_string().into_boxed_str()),
            traceback: "",
            behaviour: None,
        }
    }

    fn with_tb(mut e: Evidence<'static>, tb: &str) -> Evidence<'static> {
        e.traceback = Box::leak(tb.to_string().into_boxed_str());
        e
    }

    fn with_status(mut e: Evidence<'static>, status: Status) -> Evidence<'static> {
        e.status = status;
        e
    }

    /// One real-looking example per rule, with the rule that must fire.
    fn examples() -> Vec<(&'static str, Evidence<'static>)> {
        let torch_tb = "  File \"/env/lib/python3.11/site-packages/torch/nn/modules/conv.py\", line 549, in forward";
        vec![
            ("timeout", with_status(fail("", ""), Status::Timeout)),
            ("memory", with_status(fail("", ""), Status::Oom)),
            (
                "output_flood",
                with_status(fail("", ""), Status::OutputLimit),
            ),
            ("disk_flood", with_status(fail("", ""), Status::DiskLimit)),
            (
                "no_definition",
                with_status(
                    fail(
                        "NoDefinition",
                        "the generated code defines no top-level function `f`",
                    ),
                    Status::PatchError,
                ),
            ),
            (
                "syntax",
                with_status(
                    fail("SyntaxError", "invalid syntax (solution.py, line 3)"),
                    Status::Error,
                ),
            ),
            ("syntax", fail("IndentationError", "unexpected indent")),
            (
                "pytest_did_not_raise",
                fail("Failed", "DID NOT RAISE <class 'ValueError'>"),
            ),
            (
                "assert_library_type",
                fail(
                    "AssertionError",
                    "assert False\n +  where False = isinstance(array([1., 2.]), <class 'torch.Tensor'>)",
                ),
            ),
            (
                "assert_shape",
                fail("AssertionError", "assert torch.Size([2, 4]) == (2, 3)"),
            ),
            (
                "assert_shape",
                fail(
                    "AssertionError",
                    "The values for attribute 'shape' do not match: torch.Size([2]) != torch.Size([3]).",
                ),
            ),
            (
                "assert_nan",
                fail(
                    "AssertionError",
                    "assert not tensor(True)\n +  where tensor(True) = <built-in method any>()\n +    where isnan",
                ),
            ),
            (
                "assert_close",
                fail(
                    "AssertionError",
                    "Tensor-likes are not close!\n\nMismatched elements: 3 / 4 (75.0%)\nGreatest absolute difference: 0.5",
                ),
            ),
            (
                "assert_close",
                fail("AssertionError", "assert 0.5 == 0.7 ± 7.0e-07"),
            ),
            (
                "assert_dtype",
                fail(
                    "AssertionError",
                    "assert torch.float64 == torch.float32\n +  where torch.float64 = tensor([1.]).dtype",
                ),
            ),
            (
                "assert_none",
                fail("AssertionError", "assert None is not None"),
            ),
            ("assert_number", fail("AssertionError", "assert 3 == 4")),
            (
                "assert_other",
                fail(
                    "AssertionError",
                    "assert False\n +  where False = <built-in method equal>(tensor([1, 2]), tensor([2, 1]))",
                ),
            ),
            (
                "state_dict",
                fail(
                    "RuntimeError",
                    "Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \"fc2.weight\"",
                ),
            ),
            (
                "autograd",
                fail(
                    "RuntimeError",
                    "element 0 of tensors does not require grad and does not have a grad_fn",
                ),
            ),
            (
                "device",
                fail("AssertionError", "Torch not compiled with CUDA enabled"),
            ),
            (
                "network",
                fail("OSError", "[Errno 101] Network is unreachable"),
            ),
            (
                "network",
                fail(
                    "urllib.error.URLError",
                    "<urlopen error [Errno -3] Temporary failure in name resolution>",
                ),
            ),
            (
                "input_shape",
                fail(
                    "RuntimeError",
                    "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [28, 28]",
                ),
            ),
            (
                "input_shape",
                fail(
                    "RuntimeError",
                    "Given groups=1, weight of size [16, 3, 3, 3], expected input[1, 1, 28, 28] to have 3 channels, but got 1 channels instead",
                ),
            ),
            (
                "input_shape",
                fail(
                    "ValueError",
                    "Expected 2D array, got 1D array instead:\narray=[1. 2.].",
                ),
            ),
            (
                "operation_shape",
                fail(
                    "RuntimeError",
                    "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x4)",
                ),
            ),
            (
                "operation_shape",
                fail(
                    "ValueError",
                    "operands could not be broadcast together with shapes (32,64) (64,32)",
                ),
            ),
            (
                "operation_shape",
                fail(
                    "RuntimeError",
                    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
                ),
            ),
            (
                "empty_or_tiny_input",
                fail(
                    "ValueError",
                    "Expected more than 1 value per channel when training, got input size torch.Size([1, 8])",
                ),
            ),
            (
                "empty_or_tiny_input",
                fail(
                    "ValueError",
                    "zero-size array to reduction operation maximum which has no identity",
                ),
            ),
            (
                "reshape_or_axis",
                fail(
                    "RuntimeError",
                    "shape '[2, 5]' is invalid for input of size 12",
                ),
            ),
            (
                "reshape_or_axis",
                fail(
                    "IndexError",
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
                ),
            ),
            (
                "axis_error",
                fail("numpy.exceptions.AxisError", "axis 3 is out of bounds"),
            ),
            (
                "dtype_cast",
                fail(
                    "RuntimeError",
                    "result type Float can't be cast to the desired output type Long",
                ),
            ),
            (
                "dtype_mismatch",
                fail(
                    "RuntimeError",
                    "expected scalar type Float but found Double",
                ),
            ),
            (
                "dtype_mismatch",
                fail(
                    "IndexError",
                    "tensors used as indices must be long, int, byte or bool tensors",
                ),
            ),
            (
                "dtype_unsupported",
                fail(
                    "RuntimeError",
                    "\"addmm_impl_cpu_\" not implemented for 'Long'",
                ),
            ),
            ("nan_input", fail("ValueError", "Input contains NaN.")),
            (
                "wrong_framework_import",
                with_status(
                    fail("ModuleNotFoundError", "No module named 'tensorflow'"),
                    Status::Error,
                ),
            ),
            (
                "dl_submodule_missing",
                fail("ModuleNotFoundError", "No module named 'torch.nn.layers'"),
            ),
            (
                "unavailable_dl_library",
                fail("ModuleNotFoundError", "No module named 'transformers'"),
            ),
            (
                "dl_import_missing_name",
                fail(
                    "ImportError",
                    "cannot import name 'Dense' from 'torch.nn' (/env/site-packages/torch/nn/__init__.py)",
                ),
            ),
            (
                "import_other",
                fail("ModuleNotFoundError", "No module named 'utils'"),
            ),
            (
                "dl_module_attribute",
                fail(
                    "AttributeError",
                    "module 'torch.nn' has no attribute 'Dense'",
                ),
            ),
            (
                "undefined_layer",
                with_tb(
                    fail("AttributeError", "'Net' object has no attribute 'fc2'"),
                    "  File \"/env/site-packages/torch/nn/modules/module.py\", line 1931, in __getattr__",
                ),
            ),
            (
                "tensor_attribute",
                fail(
                    "AttributeError",
                    "'Tensor' object has no attribute 'append'",
                ),
            ),
            (
                "none_attribute",
                fail(
                    "AttributeError",
                    "'NoneType' object has no attribute 'shape'",
                ),
            ),
            (
                "attribute_other",
                fail("AttributeError", "'list' object has no attribute 'shape'"),
            ),
            (
                "dl_name_undefined",
                fail("NameError", "name 'torch' is not defined"),
            ),
            (
                "name_undefined",
                fail("NameError", "name 'hidden_size' is not defined"),
            ),
            (
                "name_undefined",
                fail(
                    "UnboundLocalError",
                    "cannot access local variable 'y' where it is not associated with a value",
                ),
            ),
            (
                "invalid_library_arguments",
                fail(
                    "TypeError",
                    "conv2d() received an invalid combination of arguments - got (Tensor, int)",
                ),
            ),
            (
                "type_mismatch",
                fail(
                    "TypeError",
                    "linear(): argument 'input' (position 1) must be Tensor, not list",
                ),
            ),
            (
                "type_mismatch",
                fail(
                    "TypeError",
                    "unsupported operand type(s) for +: 'Tensor' and 'str'",
                ),
            ),
            (
                "library_call_arguments",
                with_tb(
                    fail(
                        "TypeError",
                        "__init__() got an unexpected keyword argument 'kernel'",
                    ),
                    torch_tb,
                ),
            ),
            (
                "signature_differs",
                fail(
                    "TypeError",
                    "normalize() missing 1 required positional argument: 'std'",
                ),
            ),
            ("type_other", fail("TypeError", "weird")),
            (
                "unpack",
                fail(
                    "ValueError",
                    "not enough values to unpack (expected 4, got 3)",
                ),
            ),
            (
                "conversion",
                fail("ValueError", "could not convert string to float: 'a'"),
            ),
            ("math_domain", fail("ValueError", "math domain error")),
            (
                "library_value_error",
                with_tb(fail("ValueError", "stride should not be zero"), torch_tb),
            ),
            ("value_other", fail("ValueError", "invalid mode")),
            (
                "index_dimension",
                fail(
                    "IndexError",
                    "index 5 is out of bounds for dimension 0 with size 5",
                ),
            ),
            ("index_other", fail("IndexError", "list index out of range")),
            (
                "division_by_zero",
                fail("ZeroDivisionError", "division by zero"),
            ),
            ("not_implemented", fail("NotImplementedError", "")),
            (
                "recursion",
                fail("RecursionError", "maximum recursion depth exceeded"),
            ),
            ("key_error", fail("KeyError", "'weight'")),
            (
                "file_not_found",
                fail(
                    "FileNotFoundError",
                    "[Errno 2] No such file or directory: 'data.csv'",
                ),
            ),
            ("memory_error", fail("MemoryError", "")),
            (
                "runtime_other",
                fail(
                    "RuntimeError",
                    "Trying to resize storage that is not resizable",
                ),
            ),
            (
                "fallback",
                fail("ProcessCrash", "the test process died (signal 11)"),
            ),
        ]
    }

    #[test]
    fn every_rule_fires_on_its_example() {
        for (expected, e) in examples() {
            let label = classify(&e).unwrap_or_else(|| panic!("no label for {expected}"));
            assert_eq!(label.rule, expected, "{:?}: {}", e.kind, e.message);
            assert_eq!(label.source, LabelSource::Rules);
        }
    }

    #[test]
    fn every_rule_has_an_example() {
        let covered: Vec<&str> = examples().iter().map(|(r, _)| *r).collect();
        for id in rule_ids() {
            assert!(covered.contains(&id), "rule {id} has no example");
        }
    }

    #[test]
    fn subtypes_belong_to_their_rule_category() {
        for r in RULES {
            if let Some(c) = r.subtype.category() {
                assert_eq!(c, r.category, "rule {}", r.id);
            }
        }
        let mut ids = rule_ids();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len(), "rule ids are unique");
    }

    #[test]
    fn passes_no_code_and_infra_get_no_label() {
        for s in [Status::Pass, Status::NoCode, Status::Infra] {
            assert_eq!(classify(&with_status(fail("ValueError", "x"), s)), None);
        }
    }

    #[test]
    fn the_category_and_subtype_of_a_label_come_from_its_rule() {
        let l = classify(&fail(
            "RuntimeError",
            "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x4)",
        ))
        .unwrap();
        assert_eq!(
            (l.category, l.subtype),
            (
                Category::OperationCalculationError,
                Subtype::ShapeErrorInOperation
            )
        );
        let l = classify(&fail("NameError", "name 'np' is not defined")).unwrap();
        assert_eq!(
            (l.category, l.subtype),
            (
                Category::HallucinatedObject,
                Subtype::MissingUndefinedDlModule
            )
        );
    }

    #[test]
    fn refinement_answers_are_parsed_tolerantly_and_checked() {
        assert_eq!(
            parse_refinement(
                "Sure! {\"category\": \"wrong_input_type\", \"subtype\": \"type_mismatch\"}"
            ),
            Some((Category::WrongInputType, Subtype::TypeMismatch))
        );
        assert_eq!(
            parse_refinement("{\"category\": \"silly_mistake\", \"subtype\": \"not_dl_related\"}"),
            Some((Category::SillyMistake, Subtype::NotDlRelated))
        );
        // a subtype of another category is refused; the next object is taken
        assert_eq!(
            parse_refinement(
                "{\"category\": \"syntax_error\", \"subtype\": \"type_mismatch\"} or {\"category\": \"wrong_input_type\", \"subtype\": \"type_mismatch\"}"
            ),
            Some((Category::WrongInputType, Subtype::TypeMismatch))
        );
        assert_eq!(parse_refinement("no idea"), None);
        assert_eq!(parse_refinement("{\"category\": \"other\"}"), None);
    }

    #[test]
    fn deep_bench_titles_are_aliases_of_the_internal_names() {
        // every category title as the reference notes write it
        for (title, c) in [
            ("Misinterpretation", Category::Misinterpretation),
            ("Syntax error", Category::SyntaxError),
            ("Silly mistake", Category::SillyMistake),
            ("Prompt-biased code", Category::PromptBiasedCode),
            ("Missing corner case", Category::MissingCornerCase),
            ("Wrong input type", Category::WrongInputType),
            ("Hallucinated object", Category::HallucinatedObject),
            ("Wrong attribute", Category::WrongAttribute),
            (
                "Non-prompted consideration",
                Category::NonPromptedConsideration,
            ),
            (
                "Operation/calculation error",
                Category::OperationCalculationError,
            ),
            ("Performance issue", Category::PerformanceIssue),
            (
                "Prompt missing information",
                Category::PromptMissingInformation,
            ),
            (
                "Incorrect or undefined variable/method references",
                Category::UndefinedReference,
            ),
            ("Constant value error", Category::ConstantValueError),
        ] {
            assert_eq!(Category::parse(title), Some(c), "{title}");
            assert_eq!(Category::parse(&c.name()), Some(c));
            assert_eq!(Category::parse(c.title()), Some(c));
        }
        for (title, s) in [
            (
                "incorrect DL library usage",
                Subtype::IncorrectDlLibraryUsage,
            ),
            (
                "shape and dimension mismatch",
                Subtype::ShapeDimensionMismatch,
            ),
            (
                "tensor type/value edge cases",
                Subtype::TensorTypeValueEdgeCase,
            ),
            (
                "shape/dimension edge cases",
                Subtype::ShapeDimensionEdgeCase,
            ),
            (
                "incorrect DL library arguments",
                Subtype::IncorrectLibraryArguments,
            ),
            (
                "missing or undefined DL modules",
                Subtype::MissingUndefinedDlModule,
            ),
            (
                "incorrect usage of DL modules",
                Subtype::IncorrectDlModuleUsage,
            ),
            ("dtype casting", Subtype::DtypeCasting),
            ("shape errors in operations", Subtype::ShapeErrorInOperation),
            ("incorrect algebra", Subtype::IncorrectAlgebra),
            ("Not DL-related", Subtype::NotDlRelated),
        ] {
            assert_eq!(Subtype::parse(title), Some(s), "{title}");
        }
        for s in Subtype::ALL {
            assert_eq!(Subtype::parse(&s.name()), Some(*s));
            assert_eq!(Subtype::parse(s.title()), Some(*s));
        }
        assert_eq!(Category::parse("typo error"), None);
        // the paper's other spellings (appendix E, Table 6)
        for (title, c) in [
            ("Missing Corner Cases", Category::MissingCornerCase),
            ("Hallucinated Objects", Category::HallucinatedObject),
            ("Prompt biased Code", Category::PromptBiasedCode),
        ] {
            assert_eq!(Category::parse(title), Some(c), "{title}");
        }
        for (title, s) in [
            (
                "Shape and Dimension Error in Operations",
                Subtype::ShapeErrorInOperation,
            ),
            ("DL Performance Issues", Subtype::DlPerformance),
            (
                "Not Defining the Correct DL Library in the Prompt",
                Subtype::NotDefiningDlLibrary,
            ),
            (
                "Not defining correct dl library",
                Subtype::NotDefiningDlLibrary,
            ),
        ] {
            assert_eq!(Subtype::parse(title), Some(s), "{title}");
        }
        // serde reads titles too, and still writes the internal name
        let c: Category = serde_json::from_str("\"Operation/Calculation Error\"").unwrap();
        assert_eq!(c, Category::OperationCalculationError);
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            "\"operation_calculation_error\""
        );
        assert_eq!(
            parse_refinement(
                "{\"category\": \"Wrong Input Type\", \"subtype\": \"Type mismatch\"}"
            ),
            Some((Category::WrongInputType, Subtype::TypeMismatch))
        );
    }

    fn finding(f: &str) -> Behaviour {
        Behaviour {
            finding: f.into(),
            call: Some(0),
            calls: Some(1),
            ..Behaviour::default()
        }
    }

    #[test]
    fn behaviour_rules_label_by_what_the_code_did() {
        let ids = |b: &Behaviour| behaviour_rule(b);
        assert_eq!(ids(&finding("same")), None);
        assert_eq!(ids(&finding("unavailable")), None);
        // an exception the generation alone raised goes to the evidence rules
        assert_eq!(ids(&finding("candidate_raises")), None);
        let mut b = finding("candidate_raises");
        b.edge = vec!["empty".into()];
        assert_eq!(ids(&b), Some("behaviour_empty_input"));
        let mut b = finding("same");
        b.ignored_args = vec!["lengths".into()];
        assert_eq!(ids(&b), Some("behaviour_ignored_argument"));
        let mut b = finding("values");
        b.library_args = vec!["hann_window(periodic=False vs True)".into()];
        assert_eq!(ids(&b), Some("behaviour_library_arguments"));
        assert_eq!(
            ids(&finding("reference_raises")),
            Some("behaviour_reference_raises")
        );
        assert_eq!(ids(&finding("both_raise")), Some("behaviour_both_raise"));
        assert_eq!(ids(&finding("nan")), Some("behaviour_nan"));
        assert_eq!(ids(&finding("type")), Some("behaviour_type"));
        let mut b = finding("shape");
        assert_eq!(ids(&b), Some("behaviour_shape"));
        b.broadcast = true;
        assert_eq!(ids(&b), Some("behaviour_shape_broadcast"));
        b.off_by_one = true;
        assert_eq!(ids(&b), Some("behaviour_off_by_one"));
        assert_eq!(ids(&finding("dtype")), Some("behaviour_dtype"));
        assert_eq!(ids(&finding("side_effect")), Some("behaviour_side_effect"));
        let mut v = finding("values");
        assert_eq!(ids(&v), Some("behaviour_values"));
        v.close = true;
        assert_eq!(ids(&v), Some("behaviour_close"));
        v.close = false;
        v.ratio = Some(0.5);
        assert_eq!(ids(&v), Some("behaviour_scaled"));
        v.permuted = true;
        assert_eq!(ids(&v), Some("behaviour_permuted"));
        v.layout = true;
        assert_eq!(ids(&v), Some("behaviour_layout"));
        v.sentinel = Some("-1.0".into());
        assert_eq!(ids(&v), Some("behaviour_sentinel"));
        // every rule the function names is documented, in order
        let documented: Vec<&str> = BEHAVIOUR_RULES.iter().map(|r| r.0).collect();
        assert_eq!(documented.len(), 18);
    }

    #[test]
    fn a_class_method_finding_is_labelled_as_a_call_and_names_the_method() {
        // a module's forward fails inside torch.cat on a size the reference rejects
        let b: Behaviour = serde_json::from_str(
            r#"{"finding": "both_raise", "call": 1, "calls": 2, "method": "forward",
                "candidate": "RuntimeError: Sizes of tensors must match except in dimension 1",
                "reference": "ValueError: height and width must be divisible by 4",
                "raised_at": "solution.py:52 in forward: d2 = torch.cat([u, e2], dim=1)"}"#,
        )
        .unwrap();
        assert_eq!(b.method.as_deref(), Some("forward"));
        let mut e = fail("RuntimeError", "Sizes of tensors must match");
        e.behaviour = Some(Box::leak(Box::new(b)));
        let l = classify(&e).unwrap();
        assert_eq!(
            (l.category, l.subtype, l.rule.as_str()),
            (
                Category::MissingCornerCase,
                Subtype::ShapeDimensionEdgeCase,
                "behaviour_both_raise"
            )
        );
        let evidence = l.evidence.unwrap();
        assert!(evidence.contains("call 2; method forward"), "{evidence}");
    }

    #[test]
    fn a_failed_test_is_labelled_by_behaviour_before_its_assertion() {
        // before: every allclose failure was a calculation error
        let mut e = fail(
            "AssertionError",
            "Tensor-likes are not close!\n\nMismatched elements: 4 / 4 (100.0%)",
        );
        assert_eq!(classify(&e).unwrap().rule, "assert_close");
        let b = Behaviour {
            candidate: Some("output: tensor shape (4,) dtype float32".into()),
            ignored_args: vec!["lengths".into()],
            ..finding("values")
        };
        e.behaviour = Some(Box::leak(Box::new(b)));
        let l = classify(&e).unwrap();
        assert_eq!(
            (l.category, l.subtype, l.rule.as_str()),
            (
                Category::Misinterpretation,
                Subtype::IncorrectDlFunctionality,
                "behaviour_ignored_argument"
            )
        );
        assert!(
            l.evidence
                .as_deref()
                .unwrap()
                .contains("never reads lengths"),
            "{l:?}"
        );
        // the reference rejects an odd-sized input the generation lets through
        let b = Behaviour {
            candidate: Some("RuntimeError: Sizes of tensors must match".into()),
            reference: Some("ValueError: height and width must be divisible by 4".into()),
            ..finding("both_raise")
        };
        e.behaviour = Some(Box::leak(Box::new(b)));
        let l = classify(&e).unwrap();
        assert_eq!(
            (l.category, l.subtype),
            (Category::MissingCornerCase, Subtype::ShapeDimensionEdgeCase)
        );
        // statuses keep their rules
        let e = with_status(e, Status::Timeout);
        assert_eq!(classify(&e).unwrap().rule, "timeout");
        // a finding read from the plugin's JSON, unknown keys ignored
        let b: Behaviour = serde_json::from_str(
            r#"{"finding": "values", "rel_error": 0.01, "close": true, "edge": ["ties"], "new": 1}"#,
        )
        .unwrap();
        assert_eq!(behaviour_rule(&b), Some("behaviour_close"));
    }
}
