//! Code context for the prompt (RepGen's retrieval, without the dense half: no model downloads):
//! the Python definitions of the project (`--repo DIR`, RepGen's `code/`) or of the installed
//! packages the report pins that are not the frameworks, split by Python's `ast`
//! (`python -m reprolab.context`), ranked against the report with BM25 over code-aware tokens
//! (snake_case, CamelCase and dotted names split; keywords and common words dropped). Functions
//! named in the report's traceback and identifiers the report quotes are boosted; when the
//! symptom is silent (NaN, no change, a value) the top training loops (RepGen's detector) are
//! added. The top K within a character budget go to the model.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use bm25::{EmbedderBuilder, Scorer, Tokenizer};
use serde::{Deserialize, Serialize};

use crate::facts::{Facts, Symptom};

/// Packages whose source is never context: the frameworks and their common companions are what
/// the model knows; a project or a smaller library is what it may not.
pub const FRAMEWORKS: &[&str] = &[
    "torch",
    "torchvision",
    "torchaudio",
    "torchtext",
    "keras",
    "tensorflow",
    "tensorflow-cpu",
    "tf-keras",
    "jax",
    "jaxlib",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "matplotlib",
    "pillow",
    "triton",
];

/// One definition as the Python helper reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct Definition {
    /// The directory `file` is relative to.
    #[serde(default)]
    pub root: String,
    pub file: String,
    pub name: String,
    pub qualname: String,
    /// `function`, `class` or `method`.
    pub kind: String,
    pub start: u32,
    pub end: u32,
    pub source: String,
    #[serde(default)]
    pub is_training: bool,
    #[serde(default)]
    pub is_test: bool,
}

/// The definitions of a set of roots.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Index {
    pub definitions: Vec<Definition>,
    #[serde(default)]
    pub files: usize,
    #[serde(default)]
    pub syntax_errors: usize,
    #[serde(default)]
    pub too_large: usize,
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("cannot run {}", python.display())]
    Run {
        python: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("indexing the code failed: {detail}")]
    Output { detail: String },
}

fn helper(
    python: &Path,
    pythonpath: Option<&Path>,
    args: &[&std::ffi::OsStr],
) -> Result<Vec<u8>, ContextError> {
    let mut cmd = std::process::Command::new(python);
    cmd.args(["-m", "reprolab.context"]).args(args);
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let out = cmd.output().map_err(|source| ContextError::Run {
        python: python.to_path_buf(),
        source,
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(ContextError::Output {
            detail: err.lines().last().unwrap_or("no output").to_string(),
        });
    }
    Ok(out.stdout)
}

/// The definitions under `roots` (directories or files), by the environment's Python.
pub fn index(
    python: &Path,
    pythonpath: Option<&Path>,
    roots: &[PathBuf],
) -> Result<Index, ContextError> {
    if roots.is_empty() {
        return Ok(Index::default());
    }
    let mut args: Vec<&std::ffi::OsStr> = vec!["--definitions".as_ref()];
    args.extend(roots.iter().map(|r| r.as_os_str()));
    let out = helper(python, pythonpath, &args)?;
    serde_json::from_slice(&out).map_err(|e| ContextError::Output {
        detail: format!("unreadable definitions: {e}"),
    })
}

/// Where the environment has each of `packages` installed (those it has).
pub fn package_dirs(
    python: &Path,
    pythonpath: Option<&Path>,
    packages: &[String],
) -> Result<Vec<PathBuf>, ContextError> {
    if packages.is_empty() {
        return Ok(Vec::new());
    }
    let mut args: Vec<&std::ffi::OsStr> = vec!["--package-dirs".as_ref()];
    args.extend(packages.iter().map(|p| std::ffi::OsStr::new(p.as_str())));
    let out = helper(python, pythonpath, &args)?;
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&out).map_err(|e| ContextError::Output {
            detail: format!("unreadable package directories: {e}"),
        })?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in packages {
        if let Some(dir) = map.get(p).and_then(|v| v.as_str()) {
            let dir = PathBuf::from(dir);
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    Ok(dirs)
}

/// The packages of `names` whose source may be context: not a framework.
pub fn context_packages<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| {
            let n = n.to_lowercase().replace('_', "-");
            !FRAMEWORKS.contains(&n.as_str()) && n != "reprolab"
        })
        .cloned()
        .collect()
}

/// Words that say nothing about which code is meant: Python's keywords, its most common names,
/// and English glue words.
const STOP: &[&str] = &[
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "false",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "none",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "true",
    "try",
    "while",
    "with",
    "yield",
    "self",
    "cls",
    "args",
    "kwargs",
    "super",
    "init",
    "print",
    "len",
    "range",
    "isinstance",
    "int",
    "str",
    "float",
    "bool",
    "list",
    "dict",
    "tuple",
    "type",
    "object",
    "py",
    "the",
    "an",
    "to",
    "of",
    "on",
    "at",
    "by",
    "be",
    "it",
    "this",
    "that",
    "are",
    "was",
    "were",
    "has",
    "have",
    "had",
    "but",
    "can",
    "do",
    "does",
    "did",
    "when",
    "what",
    "which",
    "my",
    "me",
    "we",
    "you",
    "your",
    "our",
    "there",
    "here",
    "then",
    "than",
    "so",
    "if",
    "no",
    "yes",
    "with",
    "get",
    "set",
    "use",
    "used",
    "using",
    "file",
    "line",
    "most",
    "recent",
    "call",
    "last",
    "traceback",
    "module",
    "lib",
    "site",
    "packages",
    "python",
    "error",
    "https",
    "http",
    "com",
    "www",
    "github",
];

fn is_stop(t: &str) -> bool {
    t.len() < 2 || t.chars().all(|c| c.is_ascii_digit()) || STOP.contains(&t)
}

/// Split one identifier at CamelCase boundaries (`BCELoss` -> BCE, Loss; `rotateHalf` ->
/// rotate, Half); digits stay with their letters (`conv2d`).
fn camel_parts(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (pos, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        if c.is_uppercase()
            && (prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower))
        {
            parts.push(&word[start..pos]);
            start = pos;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// Code-aware tokens: identifiers split at `_`, `.` and CamelCase, lowercased, each compound
/// identifier kept whole too (an exact name match counts more); keywords and common words
/// dropped.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.trim_matches('_');
        if word.is_empty() {
            continue;
        }
        let pieces: Vec<&str> = word
            .split('_')
            .filter(|p| !p.is_empty())
            .flat_map(camel_parts)
            .collect();
        if pieces.len() > 1 {
            let whole = word.to_lowercase();
            if !is_stop(&whole) {
                out.push(whole);
            }
        }
        for p in pieces {
            let p = p.to_lowercase();
            if !is_stop(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// [`tokenize`] for the `bm25` crate.
#[derive(Debug, Clone, Copy, Default)]
pub struct CodeTokenizer;

impl Tokenizer for CodeTokenizer {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        tokenize(input_text)
    }
}

/// Settings of the selection.
#[derive(Debug, Clone)]
pub struct ContextOptions {
    /// Definitions by rank (0: no context).
    pub k: usize,
    /// Characters of source in all, at most.
    pub budget_chars: usize,
    /// Training loops added when the symptom is silent.
    pub training: usize,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            k: 5,
            budget_chars: 6000,
            training: 2,
        }
    }
}

/// One definition given to the model.
#[derive(Debug, Clone, Serialize)]
pub struct Snippet {
    pub file: String,
    pub name: String,
    pub qualname: String,
    pub kind: String,
    pub start: u32,
    pub end: u32,
    pub score: f32,
    /// Why it was chosen: `traceback` (a frame of the report's traceback), `rank` (BM25 with
    /// the boosts), `training-loop` (added for a silent symptom).
    pub why: String,
    #[serde(skip)]
    pub source: String,
}

/// Score added for a definition named by a frame of the report's traceback (more when the
/// frame's file is the definition's) and for one whose name the report quotes as code; the
/// traceback's definitions are ordered first whatever their score.
const FRAME_BOOST: f32 = 50.0;
const FRAME_FILE_BOOST: f32 = 10.0;
const QUOTED_BOOST: f32 = 8.0;
/// A test's score is scaled by this: tests show usage but are rarely where the bug lives.
const TEST_FACTOR: f32 = 0.5;

/// Identifiers the report writes as code: in backticks, called (`name(`), or dotted/snake/camel
/// compounds.
fn quoted_identifiers(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for (i, part) in text.split('`').enumerate() {
        let in_tick = i % 2 == 1;
        for w in part.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
            for seg in w.split('.') {
                let seg = seg.trim_matches('_');
                if seg.len() < 3 {
                    continue;
                }
                let compound = seg.contains('_') || camel_parts(seg).len() > 1;
                if in_tick || compound {
                    out.insert(seg.to_string());
                }
            }
        }
    }
    // `name(` anywhere.
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            if c == '(' && word.len() >= 3 {
                out.insert(word.clone());
            }
            word.clear();
        }
    }
    out
}

/// Rank `index` against the report and choose the snippets.
pub fn select(
    index: &Index,
    report_text: &str,
    facts: &Facts,
    opts: &ContextOptions,
) -> Vec<Snippet> {
    let defs = &index.definitions;
    if opts.k == 0 || defs.is_empty() {
        return Vec::new();
    }
    let docs: Vec<String> = defs
        .iter()
        .map(|d| format!("{} {} {}", d.qualname, d.file, d.source))
        .collect();
    let corpus: Vec<&str> = docs.iter().map(String::as_str).collect();
    let embedder = EmbedderBuilder::<u32, CodeTokenizer>::with_tokenizer_and_fit_to_corpus(
        CodeTokenizer,
        &corpus,
    )
    .build();
    let mut scorer = Scorer::<usize>::new();
    for (i, d) in docs.iter().enumerate() {
        scorer.upsert(&i, embedder.embed(d));
    }

    // The query: the report, the stated exceptions and the traceback's functions; each token
    // once (the report's repetitions are not relevance).
    let frames: Vec<&crate::facts::StatedFrame> =
        facts.errors.iter().flat_map(|e| e.frames.iter()).collect();
    let mut query_text = report_text.to_string();
    for e in &facts.errors {
        query_text.push(' ');
        query_text.push_str(&e.qualified);
    }
    for f in &frames {
        query_text.push(' ');
        query_text.push_str(&f.function);
    }
    let mut seen = BTreeSet::new();
    let query: Vec<String> = tokenize(&query_text)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect();
    let query_embedding = embedder.embed(&query.join(" "));

    // Definitions the traceback runs through come first, innermost first (where the error
    // arises): those whose file and name match a frame, then those matching by a name that few
    // definitions share (a frame's `forward` says nothing about which of many `forward`s).
    let same_file = |frame: &str, file: &str| {
        let frame = frame.replace('\\', "/");
        let file = file.replace('\\', "/");
        frame == file || frame.ends_with(&format!("/{file}"))
    };
    let quoted = quoted_identifiers(report_text);
    let mut scored: Vec<(usize, f32, &'static str, (u8, usize))> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut s = scorer.score(&i, &query_embedding).unwrap_or(0.0);
            let mut why = "rank";
            let mut tier = (0u8, 0usize);
            if let Some(depth) = frames
                .iter()
                .rposition(|f| f.function == d.name && same_file(&f.file, &d.file))
            {
                s += FRAME_BOOST + FRAME_FILE_BOOST;
                tier = (2, depth);
            } else if let Some(depth) = frames.iter().rposition(|f| f.function == d.name)
                && defs.iter().filter(|o| o.name == d.name).count() <= 2
            {
                s += FRAME_BOOST;
                tier = (1, depth);
            } else if quoted.contains(&d.name) || quoted.contains(&d.qualname) {
                s += QUOTED_BOOST;
            }
            if tier.0 > 0 {
                why = "traceback";
            }
            if d.is_test {
                s *= TEST_FACTOR;
                tier = (0, 0);
            }
            (i, s, why, tier)
        })
        .filter(|(_, s, _, _)| *s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.3.cmp(&a.3).then(b.1.total_cmp(&a.1)).then(a.0.cmp(&b.0)));
    let scored: Vec<(usize, f32, &'static str)> =
        scored.into_iter().map(|(i, s, w, _)| (i, s, w)).collect();

    let mut chosen: Vec<Snippet> = Vec::new();
    let mut used = 0usize;
    let mut take = |i: usize, score: f32, why: &str, chosen: &mut Vec<Snippet>| -> bool {
        let d = &defs[i];
        let overlaps = chosen
            .iter()
            .any(|c| c.file == d.file && c.start <= d.end && d.start <= c.end);
        let len = d.source.chars().count();
        if overlaps || used + len > opts.budget_chars {
            return false;
        }
        used += len;
        chosen.push(Snippet {
            file: d.file.clone(),
            name: d.name.clone(),
            qualname: d.qualname.clone(),
            kind: d.kind.clone(),
            start: d.start,
            end: d.end,
            score,
            why: why.to_string(),
            source: d.source.clone(),
        });
        true
    };
    let mut ranked = 0;
    for &(i, s, why) in &scored {
        if ranked >= opts.k {
            break;
        }
        if take(i, s, why, &mut chosen) {
            ranked += 1;
        }
    }
    if matches!(
        facts.symptom,
        Symptom::Nan | Symptom::NoChange | Symptom::Value
    ) {
        // Training loops by rank, then the rest in index order.
        let mut training: Vec<(usize, f32)> = scored
            .iter()
            .filter(|(i, _, _)| defs[*i].is_training)
            .map(|&(i, s, _)| (i, s))
            .collect();
        for (i, d) in defs.iter().enumerate() {
            if d.is_training && !training.iter().any(|(j, _)| *j == i) {
                training.push((i, 0.0));
            }
        }
        let mut added = 0;
        for (i, s) in training {
            if added >= opts.training {
                break;
            }
            if chosen
                .iter()
                .any(|c| c.file == defs[i].file && c.start == defs[i].start)
            {
                added += 1; // already given
                continue;
            }
            if take(i, s, "training-loop", &mut chosen) {
                added += 1;
            }
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::extract;

    #[test]
    fn tokens_split_snake_camel_and_dots() {
        assert_eq!(
            tokenize("x_transformers.RotaryEmbedding rotate_half(BCELoss) conv2d"),
            vec![
                "x_transformers",
                "transformers",
                "rotaryembedding",
                "rotary",
                "embedding",
                "rotate_half",
                "rotate",
                "half",
                "bceloss",
                "bce",
                "loss",
                "conv2d"
            ]
        );
        // Keywords and glue words go.
        assert_eq!(
            tokenize("def forward(self, x): return the x"),
            vec!["forward"]
        );
        assert_eq!(camel_parts("HTTPServer"), vec!["HTTP", "Server"]);
    }

    fn def(file: &str, qualname: &str, source: &str, is_training: bool) -> Definition {
        let name = qualname.rsplit('.').next().unwrap().to_string();
        Definition {
            root: "/repo".into(),
            file: file.into(),
            name,
            qualname: qualname.into(),
            kind: if qualname.contains('.') {
                "method"
            } else {
                "function"
            }
            .into(),
            start: 1,
            end: source.lines().count() as u32,
            source: source.into(),
            is_training,
            is_test: file.starts_with("tests/"),
        }
    }

    /// A small project: positional embeddings, a data loader, a checkpoint loader, a training
    /// loop, and a test that mentions everything.
    fn repo() -> Index {
        let defs = vec![
            def(
                "xpos/embed.py",
                "RotaryEmbedding.forward",
                "def forward(self, t):\n    freqs = torch.einsum('i,j->ij', t, self.inv_freq)\n    return torch.cat((freqs, freqs), dim=-1)",
                false,
            ),
            def(
                "xpos/embed.py",
                "apply_rotary_pos_emb",
                "def apply_rotary_pos_emb(t, freqs, scale=1):\n    rot_dim = freqs.shape[-1]\n    t, t_unrotated = t[..., :rot_dim], t[..., rot_dim:]\n    t = (t * freqs.cos() * scale) + (rotate_half(t) * freqs.sin() * scale)\n    return torch.cat((t, t_unrotated), dim=-1)",
                false,
            ),
            def(
                "xpos/embed.py",
                "rotate_half",
                "def rotate_half(x):\n    x = rearrange(x, '... (j d) -> ... j d', j=2)\n    x1, x2 = x.unbind(dim=-2)\n    return torch.cat((-x2, x1), dim=-1)",
                false,
            ),
            def(
                "xpos/data.py",
                "make_loader",
                "def make_loader(path, batch_size):\n    ds = TextDataset(path)\n    return DataLoader(ds, batch_size=batch_size, shuffle=True)",
                false,
            ),
            def(
                "xpos/io.py",
                "load_checkpoint",
                "def load_checkpoint(model, path):\n    state = torch.load(path, map_location='cpu')\n    model.load_state_dict(state['model'])",
                false,
            ),
            def(
                "xpos/train.py",
                "train",
                "def train(model, loader, opt, epochs):\n    for epoch in range(epochs):\n        for batch in loader:\n            opt.zero_grad()\n            loss = model(batch)\n            loss.backward()\n            opt.step()",
                true,
            ),
            def(
                "tests/test_embed.py",
                "test_rotate_half",
                "def test_rotate_half():\n    x = torch.randn(2, 8)\n    assert rotate_half(rotate_half(x)).shape == x.shape",
                false,
            ),
        ];
        // Each definition after the previous one of its file, as in a real file.
        let mut defs = defs;
        let mut next: std::collections::HashMap<String, u32> = Default::default();
        for d in &mut defs {
            let at = next.entry(d.file.clone()).or_insert(1);
            d.start = *at;
            d.end = *at + d.source.lines().count() as u32 - 1;
            *at = d.end + 3;
        }
        Index {
            definitions: defs,
            ..Index::default()
        }
    }

    const CRASH: &str = "Rotary embedding fails with an odd head dimension\n\n```\nTraceback (most recent call last):\n  File \"run.py\", line 12, in <module>\n    out = apply_rotary_pos_emb(q, freqs)\n  File \"/site-packages/xpos/embed.py\", line 30, in apply_rotary_pos_emb\n    t = (t * freqs.cos() * scale) + (rotate_half(t) * freqs.sin() * scale)\n  File \"/site-packages/xpos/embed.py\", line 21, in rotate_half\n    x = rearrange(x, '... (j d) -> ... j d', j=2)\neinops.EinopsError: Shape mismatch, can't divide axis of length 63 in chunks of 2\n```\n";

    /// The `k` best snippets of [`repo`] for `text`, with the default budget.
    fn top(text: &str, facts: &Facts, k: usize) -> Vec<Snippet> {
        select(
            &repo(),
            text,
            facts,
            &ContextOptions {
                k,
                ..ContextOptions::default()
            },
        )
    }

    fn qualnames(got: &[Snippet]) -> Vec<&str> {
        got.iter().map(|s| s.qualname.as_str()).collect()
    }

    #[test]
    fn the_traceback_function_ranks_first_and_irrelevant_code_is_left_out() {
        let facts = extract(CRASH);
        let got = top(CRASH, &facts, 3);
        let names = qualnames(&got);
        assert_eq!(names[0], "rotate_half", "{names:?}");
        assert_eq!(names[1], "apply_rotary_pos_emb", "{names:?}");
        assert_eq!(got[0].why, "traceback");
        assert!(
            !names.contains(&"load_checkpoint") && !names.contains(&"train"),
            "{names:?}"
        );
        // An error is not silent: no training loop is added.
        assert!(got.iter().all(|s| s.why != "training-loop"));
    }

    #[test]
    fn a_silent_bug_gets_the_training_loop_and_the_budget_holds() {
        let text = "My rotary embedding model: the loss becomes nan after a few steps when rotate_half gets fp16 input.";
        let facts = extract(text);
        assert_eq!(facts.symptom, Symptom::Nan);
        let got = top(text, &facts, 2);
        let names = qualnames(&got);
        assert_eq!(names[0], "rotate_half", "{names:?}");
        assert!(
            got.iter()
                .any(|s| s.qualname == "train" && s.why == "training-loop"),
            "{names:?}"
        );
        // The test file scores below the definition it tests.
        let tight = select(
            &repo(),
            text,
            &facts,
            &ContextOptions {
                k: 5,
                budget_chars: 200,
                training: 0,
            },
        );
        assert!(
            tight
                .iter()
                .map(|s| s.source.chars().count())
                .sum::<usize>()
                <= 200
        );
        assert!(!tight.is_empty());
        assert!(top(text, &facts, 0).is_empty());
    }

    #[test]
    fn frameworks_are_not_context() {
        let names: Vec<String> = ["torch", "x-transformers", "Keras", "einops", "scikit_learn"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(context_packages(&names), vec!["x-transformers", "einops"]);
    }

    #[test]
    fn quoted_identifiers_are_code_like_words() {
        let q = quoted_identifiers(
            "calling `apply` on my model.rotate_half fails; see Encoder() and AttentionLayers",
        );
        assert!(q.contains("apply") && q.contains("rotate_half") && q.contains("Encoder"));
        assert!(q.contains("AttentionLayers"));
        assert!(!q.contains("calling") && !q.contains("fails"));
    }
}
