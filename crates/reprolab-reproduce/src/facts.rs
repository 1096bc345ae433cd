//! What a bug report states, extracted without an LLM: exceptions with their tracebacks,
//! warnings, library and Python versions, code blocks, quoted numbers, and from those the
//! symptom class the verdict checks. An LLM's reading of the report may be added beside these
//! facts (`crate::agent`); it never replaces them.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

/// The kind of symptom a report describes; it selects the verdict rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Symptom {
    /// An exception: type, key diagnostic tokens, raised by library code.
    Error,
    /// A warning: category and text, issued by library code.
    Warning,
    /// NaN or Inf in a computed value.
    Nan,
    /// A value that should change (weights, loss) does not.
    NoChange,
    /// A metric at a stated value.
    Value,
    /// Nothing the rules can check (code inspection without a stated number).
    Unknown,
}

impl Symptom {
    pub fn as_str(self) -> &'static str {
        match self {
            Symptom::Error => "error",
            Symptom::Warning => "warning",
            Symptom::Nan => "nan",
            Symptom::NoChange => "no-change",
            Symptom::Value => "value",
            Symptom::Unknown => "unknown",
        }
    }
}

/// One frame of a traceback quoted in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatedFrame {
    pub file: String,
    pub line: Option<u32>,
    pub function: String,
}

/// An exception the report quotes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatedError {
    /// As written, e.g. `einops.EinopsError`.
    pub qualified: String,
    /// The class name, e.g. `EinopsError`.
    pub name: String,
    /// The message; in a quoted block its continuation lines too.
    pub message: String,
    /// The traceback that ended in it, when quoted (outermost first).
    pub frames: Vec<StatedFrame>,
}

/// A warning the report quotes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatedWarning {
    pub category: String,
    pub message: String,
    pub file: Option<String>,
}

/// A number the report gives for a named quantity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatedValue {
    /// The quantity's name as written (`loss`, `accuracy`, `num_params`).
    pub metric: String,
    pub value: f64,
    /// Written as a percentage.
    pub percent: bool,
    /// In a sentence about what *should* happen, not what was observed.
    pub expected: bool,
}

impl std::fmt::Display for StatedValue {
    /// `accuracy = 10%`, `num_params = 771`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = if self.percent { "%" } else { "" };
        write!(f, "{} = {}{unit}", self.metric, self.value)
    }
}

/// A package version the report states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatedVersion {
    /// The PyPI name (`torch` for "PyTorch").
    pub package: String,
    pub version: String,
}

/// How a "does not change" report is phrased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeClaim {
    /// Stays exactly the same (weights not updating, zero gradient).
    Constant,
    /// Does not go down (loss not decreasing, not learning).
    NotDecreasing,
}

/// Everything extracted.
#[derive(Debug, Clone, Serialize)]
pub struct Facts {
    pub symptom: Symptom,
    /// Silent symptoms ([`Symptom::Nan`], [`Symptom::NoChange`]) the report states beside a
    /// warning: a reproduction must show them too.
    pub also: Vec<Symptom>,
    pub errors: Vec<StatedError>,
    pub warnings: Vec<StatedWarning>,
    pub versions: Vec<StatedVersion>,
    pub python: Option<String>,
    pub values: Vec<StatedValue>,
    pub mentions_nan: bool,
    pub change_claim: Option<ChangeClaim>,
    /// Shapes quoted anywhere (`torch.Size([128])`, `[1, 256, 256]`), normalised.
    pub shapes: Vec<String>,
    pub code_blocks: Vec<String>,
}

impl Facts {
    /// The exception the verdict looks for: the last one of the last quoted traceback, else the
    /// first one stated.
    pub fn primary_error(&self) -> Option<&StatedError> {
        self.errors
            .iter()
            .rev()
            .find(|e| !e.frames.is_empty())
            .or_else(|| self.errors.first())
    }

    /// Stated values of what was observed (not expected).
    pub fn observed_values(&self) -> impl Iterator<Item = &StatedValue> {
        self.values.iter().filter(|v| !v.expected)
    }
}

static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|[\s`'>(\[\]:])((?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt|StopIteration)))(?::[ \t]*([^\n]*))?$",
    )
    .unwrap()
});
/// The last line of a traceback: `module.Class: message` with any class name.
static TRACEBACK_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^((?:[A-Za-z_][\w]*\.)*([A-Z]\w*))(?::[ \t]*([^\n]*))?$").unwrap()
});
static WARNING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|\s)(?:(\S+\.py):(\d+):\s*)?((?:[A-Za-z_]\w*\.)*([A-Z]\w*Warning)):\s*(\S[^\n]*)$",
    )
    .unwrap()
});
static FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*File "([^"]+)", line (\d+)(?:, in (\S+))?"#).unwrap());
static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(pytorch|torch|torchvision|torchaudio|tensorflow-cpu|tensorflow|tf|keras|numpy|pandas|scikit-learn|sklearn|scipy|einops|transformers|python|[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:pytorch|torch)|x-transformers)\b(?:\s+version)?\s*(?:==|:|=|\s)\s*v?(\d+\.\d+(?:\.\d+)?(?:(?:\.post|rc|a|b|\.dev)\d+)?(?:\+[\w.]+)?)",
    )
    .unwrap()
});
static SHAPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:torch\.Size\(\s*)?[\[(]\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*[\])]\)?").unwrap()
});
static METRIC_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(`[A-Za-z_][\w.]*`|\b(?:val_loss|val_acc(?:uracy)?|loss|accuracy|acc|auc|f1|mse|mae|rmse|perplexity|ppl|parameters|params|num_params|grad(?:ient)?(?:_norm)?s?|norm|weight_change|change|output|mean|std)\b)[^.\n\d;]{0,40}?(-?\d[\d,]*(?:\.\d+)?(?:e-?\d+)?)(\s?%)?",
    )
    .unwrap()
});
/// "1,234 parameters": a count before its noun.
static COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(-?\d[\d,]*)\s+(?:trainable\s+)?(parameters|params|elements)\b").unwrap()
});
static NAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bnans?\b|\b-?inf\b|\binfinit(?:e|y)\b").unwrap());
static CONSTANT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:not|n't|never)\s+(?:be(?:ing)?\s+|get(?:ting)?\s+)?(?:updat|chang|train)|(?:remain|stay)s?\s+(?:exactly\s+)?(?:the\s+same|unchanged|constant|identical|frozen|at\s+(?:zero|0))|\bfrozen\b|\bno\s+gradients?\b|\bgrad(?:ient)?s?\s+(?:is|are)\s+(?:none|zero|all\s+zeros?)|weight_change\s*=\s*0",
    )
    .unwrap()
});
static NOT_DECREASING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:not|n't|never)\s+(?:decreas|go(?:ing)?\s+down|improv|converg|learn)|\bplateau|\bstuck\b|\bdiverg")
        .unwrap()
});
static EXPECTATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bshould\b|\bexpect|\bsupposed\b|\binstead\b|\bought\b|\bwould like\b|\bwant(?:ed)?\b")
        .unwrap()
});

/// Extract the facts of a report's text.
pub fn extract(text: &str) -> Facts {
    let (prose, code_blocks, other_blocks) = split_blocks(text);
    let errors = errors(text);
    let warnings = warnings(text);
    let (versions, python) = versions(text);
    let shapes = SHAPE
        .find_iter(text)
        .map(|m| normalise_shape(m.as_str()))
        .filter(|s| s.contains(','))
        .fold(Vec::new(), |mut acc, s| {
            if !acc.contains(&s) {
                acc.push(s);
            }
            acc
        });
    // Output blocks (no language, or text) count as observations; Python code does not.
    let observed_text = format!("{prose}\n{}", other_blocks.join("\n"));
    let values = values(&observed_text);
    let mentions_nan =
        sentences(&observed_text).any(|s| NAN.is_match(s) && !EXPECTATION.is_match(s));
    let change_claim = if sentences(&prose).any(|s| CONSTANT.is_match(s)) {
        Some(ChangeClaim::Constant)
    } else if sentences(&prose).any(|s| NOT_DECREASING.is_match(s)) {
        Some(ChangeClaim::NotDecreasing)
    } else {
        None
    };
    let symptom = if !errors.is_empty() {
        Symptom::Error
    } else if !warnings.is_empty() {
        Symptom::Warning
    } else if mentions_nan {
        Symptom::Nan
    } else if change_claim.is_some() {
        Symptom::NoChange
    } else if values.iter().any(|v| !v.expected) {
        Symptom::Value
    } else {
        Symptom::Unknown
    };
    // A NaN that only the warning's own text names is the warning, not a second symptom.
    let nan_beside_warning = mentions_nan
        && sentences(&observed_text).any(|s| {
            NAN.is_match(s)
                && !EXPECTATION.is_match(s)
                && !warnings.iter().any(|w| s.contains(w.message.trim()))
        });
    let also = if symptom == Symptom::Warning {
        [
            (nan_beside_warning, Symptom::Nan),
            (change_claim.is_some(), Symptom::NoChange),
        ]
        .into_iter()
        .filter_map(|(stated, s)| stated.then_some(s))
        .collect()
    } else {
        Vec::new()
    };
    Facts {
        symptom,
        also,
        errors,
        warnings,
        versions,
        python,
        values,
        mentions_nan,
        change_claim,
        shapes,
        code_blocks,
    }
}

/// (prose outside fences, Python code blocks, other fenced blocks).
fn split_blocks(text: &str) -> (String, Vec<String>, Vec<String>) {
    let mut prose = String::new();
    let (mut code, mut other) = (Vec::new(), Vec::new());
    let mut current: Option<(bool, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            match current.take() {
                Some((is_python, body)) => {
                    if is_python || looks_like_python(&body) {
                        code.push(body);
                    } else {
                        other.push(body);
                    }
                }
                None => {
                    let tag = trimmed.trim_start_matches(['`', '~']).trim().to_lowercase();
                    current = Some((
                        matches!(tag.as_str(), "python" | "py" | "python3"),
                        String::new(),
                    ));
                }
            }
            continue;
        }
        match &mut current {
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    if let Some((_, body)) = current {
        other.push(body);
    }
    (prose, code, other)
}

fn looks_like_python(body: &str) -> bool {
    !body.contains("Traceback (most recent call last)")
        && body.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("import ")
                || l.starts_with("from ")
                || l.starts_with("def ")
                || l.starts_with("class ")
        })
}

fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['\n', ';'])
        .flat_map(|l| l.split(". "))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn errors(text: &str) -> Vec<StatedError> {
    let mut out: Vec<StatedError> = Vec::new();
    let mut frames: Vec<StatedFrame> = Vec::new();
    let mut in_traceback = false;
    let mut in_fence = false;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().copied().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if line.contains("Traceback (most recent call last)") {
            in_traceback = true;
            frames.clear();
            continue;
        }
        if let Some(c) = FRAME.captures(line) {
            frames.push(StatedFrame {
                file: c[1].to_string(),
                line: c[2].parse().ok(),
                function: c.get(3).map(|m| m.as_str().to_string()).unwrap_or_default(),
            });
            continue;
        }
        // Inside a traceback, indented lines are source lines of the frames.
        if in_traceback && line.starts_with([' ', '\t']) && !frames.is_empty() {
            continue;
        }
        // The line that ends a traceback names the exception whatever its class is called
        // (`networkx.exception.NodeNotFound: ...`); elsewhere only names that look like one.
        let captured = EXCEPTION.captures(line.trim_end()).or_else(|| {
            (in_traceback && !frames.is_empty())
                .then(|| TRACEBACK_END.captures(line.trim_end()))
                .flatten()
        });
        let Some(c) = captured else {
            continue;
        };
        let qualified = c[1].trim_end_matches(':').to_string();
        let mut message = c
            .get(3)
            .map(|m| clean_message(m.as_str()))
            .unwrap_or_default();
        // In a quoted block a message may go on over several lines (Keras prints the layer's
        // complaint and its arguments below the first line), up to a blank line or a new
        // traceback.
        if in_fence {
            for next in lines[i + 1..].iter().take(12) {
                let t = next.trim();
                if t.is_empty()
                    || t.starts_with("```")
                    || t.starts_with("~~~")
                    || t.contains("Traceback (most recent call last)")
                    || t.starts_with("During handling")
                    || t.starts_with("The above exception")
                {
                    break;
                }
                message.push('\n');
                message.push_str(t);
            }
        }
        // "a RuntimeError" in prose, without a message, is not a quoted exception.
        if message.is_empty() && !in_traceback {
            continue;
        }
        let error = StatedError {
            name: c[2].to_string(),
            qualified,
            message,
            frames: if in_traceback {
                std::mem::take(&mut frames)
            } else {
                Vec::new()
            },
        };
        in_traceback = false;
        if let Some(same) = out
            .iter_mut()
            .find(|e| e.name == error.name && e.message == error.message)
        {
            if same.frames.is_empty() {
                same.frames = error.frames;
            }
        } else {
            out.push(error);
        }
    }
    out
}

fn clean_message(m: &str) -> String {
    let m = m.trim();
    let m = m.strip_suffix("`.").unwrap_or(m);
    m.trim()
        .trim_end_matches(['`', '"'])
        .trim_end_matches("```")
        .trim()
        .to_string()
}

fn warnings(text: &str) -> Vec<StatedWarning> {
    let mut out: Vec<StatedWarning> = Vec::new();
    for line in text.lines() {
        if let Some(c) = WARNING.captures(line.trim_end()) {
            let w = StatedWarning {
                category: c[4].to_string(),
                message: clean_message(&c[5]),
                file: c.get(1).map(|m| m.as_str().to_string()),
            };
            if !out
                .iter()
                .any(|o| o.category == w.category && o.message == w.message)
            {
                out.push(w);
            }
        }
    }
    out
}

/// Stated versions. A package named with several versions ("worked in 1.13, fails in 2.4",
/// or a version inside a quoted message) gets the one from an Environment section first, then
/// from prose, then from code or output blocks; the highest among equals.
fn versions(text: &str) -> (Vec<StatedVersion>, Option<String>) {
    static EXAMPLE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\((?:e\.g\.|eg\.?|for example)[^)]*\)").unwrap());
    static ENV_HEADING: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)environment|versions?\b|system info|setup|platform|collect_env").unwrap()
    });
    // (package, version, rank: 0 environment section, 1 prose, 2 blocks)
    let mut found: Vec<(String, String, u8)> = Vec::new();
    let (mut in_fence, mut in_env) = (false, false);
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence && (trimmed.starts_with('#') || trimmed.ends_with(':') && trimmed.len() < 60) {
            in_env = ENV_HEADING.is_match(trimmed);
        }
        let rank = if in_env {
            0
        } else if in_fence {
            2
        } else {
            1
        };
        let line = EXAMPLE.replace_all(line, "");
        for c in VERSION.captures_iter(&line) {
            let package = match c[1].to_lowercase().as_str() {
                "pytorch" => "torch".to_string(),
                "tf" => "tensorflow".to_string(),
                "sklearn" => "scikit-learn".to_string(),
                other => other.to_string(),
            };
            found.push((package, c[2].to_string(), rank));
        }
    }
    let mut out: Vec<StatedVersion> = Vec::new();
    let mut python = None;
    for (package, _, _) in &found {
        if package == "python" && python.is_some() || out.iter().any(|v| &v.package == package) {
            continue;
        }
        let best = found
            .iter()
            .filter(|(p, _, _)| p == package)
            .min_by(|a, b| {
                a.2.cmp(&b.2)
                    .then_with(|| version_key(&b.1).cmp(&version_key(&a.1)))
            })
            .map(|(_, v, _)| v.clone())
            .expect("the package was found");
        if package == "python" {
            python = Some(best);
        } else {
            out.push(StatedVersion {
                package: package.clone(),
                version: best,
            });
        }
    }
    (out, python)
}

fn version_key(v: &str) -> Vec<u64> {
    v.split(['.', '+'])
        .map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect()
}

fn values(text: &str) -> Vec<StatedValue> {
    let mut out = Vec::new();
    for sentence in sentences(text) {
        let expected = EXPECTATION.is_match(sentence);
        for c in METRIC_VALUE.captures_iter(sentence) {
            let Ok(value) = c[2].replace(',', "").parse::<f64>() else {
                continue;
            };
            out.push(StatedValue {
                metric: c[1].trim_matches('`').to_string(),
                value,
                percent: c.get(3).is_some(),
                expected,
            });
        }
        for c in COUNT.captures_iter(sentence) {
            if let Ok(value) = c[1].replace(',', "").parse::<f64>() {
                out.push(StatedValue {
                    metric: c[2].to_string(),
                    value,
                    percent: false,
                    expected,
                });
            }
        }
    }
    out
}

/// Every shape in `text` (one-dimensional ones too), normalised.
pub fn shapes_in(text: &str) -> Vec<String> {
    SHAPE
        .find_iter(text)
        .map(|m| normalise_shape(m.as_str()))
        .collect()
}

/// `text` without its shapes.
pub fn strip_shapes(text: &str) -> String {
    SHAPE.replace_all(text, " ").into_owned()
}

/// `torch.Size([1, 256])`, `(1,256)`, `[1, 256]` all become `1,256`.
pub fn normalise_shape(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_digit() || *c == ',' || *c == '-')
        .collect::<String>()
        .trim_end_matches(',')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DCGAN: &str = "Training DCGAN at 128x128 fails:\n\n```\nTraceback (most recent call last):\n  File \"main.py\", line 230, in <module>\n    errD_real = criterion(output, label)\n  File \"/usr/lib/python3.10/site-packages/torch/nn/functional.py\", line 3095, in binary_cross_entropy\n    raise ValueError(\nValueError: Using a target size (torch.Size([128])) that is different to the input size (torch.Size([3200])) is deprecated. Please ensure they have the same size.\n```\nEnvironment: PyTorch 2.0.1, Python 3.10.6\n";

    #[test]
    fn an_error_report_gives_its_exception_traceback_versions_and_shapes() {
        let f = extract(DCGAN);
        assert_eq!(f.symptom, Symptom::Error);
        let e = f.primary_error().unwrap();
        assert_eq!(e.name, "ValueError");
        assert!(
            e.message
                .starts_with("Using a target size (torch.Size([128]))")
        );
        assert_eq!(e.frames.len(), 2);
        assert_eq!(e.frames[1].function, "binary_cross_entropy");
        assert_eq!(
            f.versions,
            vec![StatedVersion {
                package: "torch".into(),
                version: "2.0.1".into()
            }]
        );
        assert_eq!(f.python.as_deref(), Some("3.10.6"));
        assert!(
            f.shapes.is_empty(),
            "single-dimension sizes are not shapes: {:?}",
            f.shapes
        );
    }

    #[test]
    fn a_quoted_message_keeps_its_continuation_lines() {
        let f = extract(
            "```\nValueError: Exception encountered when calling Sequential.call().\nInput 0 of layer 'dense' is incompatible: expected 180, received (32, 245)\n\nmore prose\n```",
        );
        assert_eq!(
            f.errors[0].message,
            "Exception encountered when calling Sequential.call().\nInput 0 of layer 'dense' is incompatible: expected 180, received (32, 245)"
        );
        let g = extract("It says ValueError: bad value\nand then stops.");
        assert_eq!(g.errors[0].message, "bad value");
    }

    #[test]
    fn a_traceback_ends_in_its_exception_whatever_its_name() {
        let f = extract(
            "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    nx.shortest_path(g, 1, 9)\nnetworkx.exception.NodeNotFound: Either source 1 or target 9 is not in G\n",
        );
        assert_eq!(f.errors[0].name, "NodeNotFound");
        assert_eq!(f.errors[0].frames.len(), 1);
        let prose = extract("Result: nothing happens");
        assert!(prose.errors.is_empty());
    }

    #[test]
    fn qualified_exceptions_and_prose_mentions() {
        let f = extract(
            "I get `einops.EinopsError: Error while processing rearrange-reduction pattern \"n -> n 1\".`\nA RuntimeError is also mentioned in passing.",
        );
        assert_eq!(f.errors.len(), 1);
        assert_eq!(f.errors[0].qualified, "einops.EinopsError");
        let t = extract(
            "[BERT/PyTorch]TypeError: gelu(): argument 'approximate' must be str, not bool",
        );
        assert_eq!(t.errors[0].name, "TypeError");
        let b =
            extract("fails with `RuntimeError: log_probs must be 3-D (batch, input, classes)`.");
        assert_eq!(
            b.errors[0].message,
            "log_probs must be 3-D (batch, input, classes)"
        );
        assert_eq!(f.errors[0].name, "EinopsError");
        assert!(
            f.errors[0].message.ends_with("\"n -> n 1\"."),
            "{}",
            f.errors[0].message
        );
    }

    #[test]
    fn warnings_nan_no_change_and_values() {
        let w = extract(
            "/x/torch/nn/modules/loss.py:535: UserWarning: Using a target size that is different",
        );
        assert_eq!(w.symptom, Symptom::Warning);
        assert_eq!(w.warnings[0].category, "UserWarning");
        assert_eq!(
            w.warnings[0].file.as_deref(),
            Some("/x/torch/nn/modules/loss.py")
        );

        let n = extract("After the second step the loss is nan. It should be a loss of about 2.3.");
        assert_eq!(n.symptom, Symptom::Nan);
        assert_eq!(n.values.len(), 1);
        assert!(n.values[0].expected);

        let c = extract(
            "The weights of `fc2` do not change at all between steps (weight_change = 0.0).",
        );
        assert_eq!(
            (c.symptom, c.change_claim),
            (Symptom::NoChange, Some(ChangeClaim::Constant))
        );
        let d = extract("The loss is not decreasing after 20 epochs.");
        assert_eq!(d.change_claim, Some(ChangeClaim::NotDecreasing));

        let v = extract(
            "Accuracy stays at 10% on every epoch; it should reach 90%. The model has 1,234 parameters.",
        );
        assert_eq!(v.symptom, Symptom::Value);
        let observed: Vec<_> = v
            .observed_values()
            .map(|v| (v.metric.as_str(), v.value, v.percent))
            .collect();
        assert_eq!(
            observed,
            vec![("Accuracy", 10.0, true), ("parameters", 1234.0, false)]
        );
    }

    #[test]
    fn versions_in_many_spellings() {
        let f = extract(
            "- PyTorch Version (e.g., 1.0): 1.9.0+cu111\n- tensorflow==2.13\nx-transformers 1.16.0, keras 3.0.5; Python version: 3.9",
        );
        let got: Vec<(&str, &str)> = f
            .versions
            .iter()
            .map(|v| (v.package.as_str(), v.version.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("torch", "1.9.0+cu111"),
                ("tensorflow", "2.13"),
                ("x-transformers", "1.16.0"),
                ("keras", "3.0.5")
            ]
        );
        assert_eq!(f.python.as_deref(), Some("3.9"));
    }

    #[test]
    fn the_environment_section_wins_over_versions_in_messages_and_prose() {
        let f = extract(
            "It worked in torch 1.13 but fails now.\n```\nUserWarning: In PyTorch 1.1.0 and later, call them in order\n```\n## Environment\ntorch 2.15.0 (CPU), Python 3.11\n",
        );
        assert_eq!(f.versions[0].version, "2.15.0");
        let g = extract("Worked with torch 1.13.1, fails with torch 2.4.0.");
        assert_eq!(g.versions[0].version, "2.4.0");
    }

    #[test]
    fn shapes_are_normalised() {
        let f = extract("got input of size [1, 256, 256] but torch.Size([2, 3]) expected");
        assert_eq!(f.shapes, vec!["1,256,256", "2,3"]);
        assert_eq!(f.symptom, Symptom::Unknown);
    }
}
