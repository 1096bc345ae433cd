//! A paper's lineage: its references resolved against a local corpus of papers (and their
//! code), the resolved ones ranked by how relevant they are to the paper's method; after
//! AutoReproduce, whose top references' code becomes context for the implementation. Offline
//! ([`resolve`]): only the corpus is searched; [`resolve_online`] also looks the references the
//! corpus lacks up on arXiv and GitHub ([`crate::online`]), or in the cache of an earlier such
//! run.
//!
//! A reference names a corpus entry when their titles agree: the token Jaccard of the
//! normalised titles (lowercase, punctuation dropped) is at least [`TITLE_MATCH`] (one word
//! more or less in a title of four or more words); at least [`TITLE_WITH_AUTHORS`], or a
//! reference title that is the entry's without its subtitle, when an author surname is shared
//! too; or, when the reference's title could not be parsed, the entry's whole title (four
//! words or more) appears in the reference's text. The entry that is the paper itself (same
//! title) is never a candidate. The resolved entries are ranked by BM25 of their text against
//! the paper's Method (or Approach) section, or against the whole paper less its references
//! when it has none.
//!
//! References not in the corpus are reported with that reason; those whose text names a tool
//! (an optimizer, a dataset, a software library, by keywords) are marked generic: they are
//! what AutoReproduce leaves out, and no corpus is expected to hold them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bm25::{EmbedderBuilder, Scorer, Tokenizer};
use serde::Serialize;

use crate::document::{Paper, Reference, is_paper_file, normalize};
use crate::online::{Lookup, OnlineReport, PaperOutcome};

/// Title token Jaccard from which a reference names an entry on its own.
pub const TITLE_MATCH: f64 = 0.8;
/// Title token Jaccard from which a shared author surname confirms the match.
pub const TITLE_WITH_AUTHORS: f64 = 0.5;
/// An entry's title must have this many words to be found verbatim in a reference's text.
const MIN_WORDS_IN_TEXT: usize = 4;

/// The paper file of a corpus directory, by preference.
const PAPER_FILES: &[&str] = &["paper.md", "paper.markdown", "paper.txt", "paper.pdf"];

/// Files listed as an entry's code: sources, notebooks, scripts and their configuration.
const CODE_EXTENSIONS: &[&str] = &[
    "py", "ipynb", "pyx", "sh", "r", "jl", "c", "cc", "cpp", "h", "hpp", "cu", "rs", "yaml", "yml",
    "toml", "cfg",
];
/// Directories whose files are not an entry's code: caches, and the bundled benchmark's
/// `mutated/` copies (benchmarks/papers), which break the paper on purpose.
const SKIPPED_DIRS: &[&str] = &["__pycache__", "node_modules", "mutated"];

#[derive(Debug, thiserror::Error)]
pub enum LineageError {
    #[error("{}: cannot read the corpus directory", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: the corpus is not a directory; expected a directory of papers (sub-directories with a paper.md, paper.txt or paper.pdf and their code, or lone .md, .txt or .pdf files)", path.display())]
    NotADirectory { path: PathBuf },
    #[error("{}: no paper in the corpus ({skipped} entries could not be read); expected sub-directories with a paper.md, paper.txt or paper.pdf, or lone .md, .txt or .pdf files", path.display())]
    NoPapers { path: PathBuf, skipped: usize },
}

/// A directory of papers.
#[derive(Debug, Clone)]
pub struct Corpus {
    pub dir: PathBuf,
    pub entries: Vec<Entry>,
    /// Entries that could not be read, with why (they are not fatal: the rest is usable).
    pub skipped: Vec<Skipped>,
}

/// One paper of the corpus.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The entry's name in the corpus directory.
    pub id: String,
    pub paper: Paper,
    /// The directory its code paths are relative to (`None` for a lone paper file).
    pub code_root: Option<PathBuf>,
    /// Code files under the entry's directory, relative, sorted; the paper file is not one.
    pub code_files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

impl Corpus {
    /// Read every entry of `dir`: a sub-directory with a paper file (its other files are its
    /// code), or a lone paper file. Hidden entries and README files are not papers.
    pub fn load(dir: &Path) -> Result<Corpus, LineageError> {
        if !dir.is_dir() {
            return Err(LineageError::NotADirectory {
                path: dir.to_path_buf(),
            });
        }
        let read_error = |source| LineageError::Read {
            path: dir.to_path_buf(),
            source,
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(read_error)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(read_error)?;
        paths.sort();
        let mut corpus = Corpus {
            dir: dir.to_path_buf(),
            entries: Vec::new(),
            skipped: Vec::new(),
        };
        for path in paths.iter().filter(|p| !is_hidden(p) && !is_readme(p)) {
            match load_entry(path) {
                Ok(Some(entry)) => corpus.entries.push(entry),
                Ok(None) => {}
                Err(reason) => corpus.skipped.push(Skipped {
                    path: path.clone(),
                    reason,
                }),
            }
        }
        if corpus.entries.is_empty() {
            return Err(LineageError::NoPapers {
                path: dir.to_path_buf(),
                skipped: corpus.skipped.len(),
            });
        }
        Ok(corpus)
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn is_hidden(path: &Path) -> bool {
    file_name(path).starts_with('.')
}

fn is_readme(path: &Path) -> bool {
    path.is_file() && file_name(path).to_ascii_lowercase().starts_with("readme")
}

/// One corpus entry; `Ok(None)` for a file that is no paper (not an error: corpora hold
/// other files), `Err` with the reason for an entry that should be a paper but is not usable.
fn load_entry(path: &Path) -> Result<Option<Entry>, String> {
    let id = file_name(path);
    if path.is_file() {
        if !is_paper_file(path) {
            return Ok(None);
        }
        let paper = Paper::load(path).map_err(|e| e.to_string())?;
        return Ok(Some(Entry {
            id,
            paper,
            code_root: None,
            code_files: Vec::new(),
        }));
    }
    let paper_file = PAPER_FILES
        .iter()
        .map(|f| path.join(f))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("no {} in the directory", PAPER_FILES.join(", ")))?;
    let paper = Paper::load(&paper_file).map_err(|e| e.to_string())?;
    let mut code_files = Vec::new();
    collect_code(path, path, &paper_file, &mut code_files)
        .map_err(|e| format!("cannot list its code: {e}"))?;
    code_files.sort();
    Ok(Some(Entry {
        id,
        paper,
        code_root: Some(path.to_path_buf()),
        code_files,
    }))
}

/// Code files under `dir`, as paths relative to `root` with `/` separators.
fn collect_code(
    root: &Path,
    dir: &Path,
    paper_file: &Path,
    out: &mut Vec<String>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if is_hidden(&path) || path == paper_file {
            continue;
        }
        if path.is_dir() {
            if !SKIPPED_DIRS.contains(&file_name(&path).as_str()) {
                collect_code(root, &path, paper_file, out)?;
            }
        } else if is_code(&path) {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(parts.join("/"));
        }
    }
    Ok(())
}

/// Whether a file of this name is code (as an entry's files are listed).
pub(crate) fn is_code_name(name: &str) -> bool {
    is_code(Path::new(name))
}

fn is_code(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    ext.is_some_and(|e| CODE_EXTENSIONS.contains(&e.as_str()))
        || file_name(path).starts_with("requirements")
}

/// How a reference was matched to its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The titles agree on their own (Jaccard ≥ [`TITLE_MATCH`]).
    Title,
    /// The titles are close (or one lacks the other's subtitle) and an author is shared.
    TitleAndAuthors,
    /// The entry's whole title appears in the reference's text.
    TitleInReference,
}

impl MatchedBy {
    pub fn label(self) -> &'static str {
        match self {
            MatchedBy::Title => "title",
            MatchedBy::TitleAndAuthors => "title+authors",
            MatchedBy::TitleInReference => "title in reference",
        }
    }
}

/// A reference matched to an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    pub matched_by: MatchedBy,
    /// Title token Jaccard (1.0 when the whole title was found in the reference's text).
    pub similarity: f64,
    pub authors_in_common: Vec<String>,
}

pub(crate) fn title_words(s: &str) -> BTreeSet<String> {
    normalize(s).split(' ').map(str::to_string).collect()
}

/// Token Jaccard of two word sets (0 when both are empty).
pub(crate) fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// Whether `reference` names the paper `entry` (see the module's doc for the rules).
pub fn match_reference(reference: &Reference, entry: &Paper) -> Option<Match> {
    let entry_title = normalize(&entry.title);
    if entry_title.is_empty() {
        return None;
    }
    let entry_words = title_words(&entry.title);
    let authors_in_common: Vec<String> = reference
        .authors
        .iter()
        .filter(|a| entry.authors.iter().any(|b| b.eq_ignore_ascii_case(a)))
        .cloned()
        .collect();
    let found = |matched_by, similarity| {
        Some(Match {
            matched_by,
            similarity,
            authors_in_common: authors_in_common.clone(),
        })
    };
    if let Some(title) = &reference.title {
        let words = title_words(title);
        let similarity = jaccard(&words, &entry_words);
        if similarity >= TITLE_MATCH {
            return found(MatchedBy::Title, similarity);
        }
        // A citation may drop the subtitle: `Softened Targets` for `Softened Targets: ...`.
        let without_subtitle = words.len() >= 2
            && entry
                .title
                .split_once(':')
                .is_some_and(|(main, _)| title_words(main) == words);
        if (similarity >= TITLE_WITH_AUTHORS || without_subtitle) && !authors_in_common.is_empty() {
            return found(MatchedBy::TitleAndAuthors, similarity);
        }
    }
    let in_text = entry_title.split(' ').count() >= MIN_WORDS_IN_TEXT
        && format!(" {} ", normalize(&reference.raw)).contains(&format!(" {entry_title} "));
    in_text
        .then(|| found(MatchedBy::TitleInReference, 1.0))
        .flatten()
}

/// Keywords that make an unresolved reference generic (cited for its tool, not its method).
const GENERIC: &[(&str, &[&str])] = &[
    (
        "optimizer",
        &[
            "stochastic optimization",
            "optimizer",
            "adam",
            "adamw",
            "sgd",
            "rmsprop",
            "adagrad",
        ],
    ),
    (
        "dataset",
        &[
            "dataset",
            "datasets",
            "data set",
            "database",
            "imagenet",
            "cifar",
            "mnist",
            "tiny images",
        ],
    ),
    (
        "software",
        &[
            "pytorch",
            "tensorflow",
            "jax",
            "scikit learn",
            "numpy",
            "library",
            "toolkit",
            "software",
        ],
    ),
];

/// The kind of tool a reference's text names (`optimizer`, `dataset`, `software`), if any.
pub fn generic_kind(reference: &Reference) -> Option<&'static str> {
    let text = format!(" {} ", normalize(&reference.raw));
    GENERIC
        .iter()
        .find(|(_, words)| words.iter().any(|w| text.contains(&format!(" {w} "))))
        .map(|(kind, _)| *kind)
}

/// A reference resolved to a corpus entry, with its rank.
#[derive(Debug, Clone, Serialize)]
pub struct Resolved {
    pub rank: usize,
    /// BM25 of the entry's text against the query (the method section).
    pub score: f64,
    pub entry: String,
    pub paper_file: PathBuf,
    pub title: String,
    pub authors: Vec<String>,
    pub year: Option<u16>,
    pub code_root: Option<PathBuf>,
    pub code_files: Vec<String>,
    pub matched_by: MatchedBy,
    pub similarity: f64,
    pub authors_in_common: Vec<String>,
    /// The paper's references that name this entry (usually one).
    pub cited_as: Vec<String>,
    /// Where the reference was resolved: `corpus` or `arxiv`.
    pub resolved_in: Source,
    /// The paper's page (its arXiv abstract); none for a corpus entry.
    pub url: Option<String>,
    /// Where its code comes from: `corpus`, `github`, or none without code.
    pub code_from: Option<Source>,
    /// The code's repository (GitHub).
    pub code_url: Option<String>,
    /// Why a paper found online has no code (nothing found, or the look-up failed).
    pub code_note: Option<String>,
}

/// Where a paper or its code was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Corpus,
    Arxiv,
    Github,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::Corpus => "corpus",
            Source::Arxiv => "arXiv",
            Source::Github => "GitHub",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Unresolved {
    pub reference: Reference,
    pub reason: String,
    /// The tool the reference names (`optimizer`, `dataset`, `software`), when it is one.
    pub generic: Option<&'static str>,
}

/// The lineage of a paper in a corpus.
#[derive(Debug, Clone, Serialize)]
pub struct Lineage {
    pub paper: PathBuf,
    pub title: String,
    /// The local corpus (none when only the network was searched).
    pub corpus: Option<PathBuf>,
    /// What the entries were ranked against.
    pub query: String,
    pub top: usize,
    /// The `top` most relevant resolved references, best first.
    pub resolved: Vec<Resolved>,
    /// The other resolved references, in rank order.
    pub below_top: Vec<Resolved>,
    pub unresolved: Vec<Unresolved>,
    /// The corpus entry that is the paper itself, left out.
    pub excluded_self: Option<String>,
    /// Corpus entries that could not be read.
    pub skipped: Vec<Skipped>,
    /// The look-ups on arXiv and GitHub (or in their cache), when there were any.
    pub online: Option<OnlineReport>,
}

/// Resolve `paper`'s references in `corpus` and rank the resolved ones; keep `top`.
pub fn resolve(paper: &Paper, corpus: &Corpus, top: usize) -> Lineage {
    let pass = corpus_pass(paper, Some(corpus));
    let unresolved = pass
        .unresolved
        .iter()
        .map(|r| Unresolved {
            reference: r.clone(),
            reason: NOT_IN_CORPUS.into(),
            generic: generic_kind(r),
        })
        .collect();
    finish(paper, Some(corpus), top, pass, unresolved, None)
}

const NOT_IN_CORPUS: &str = "not in the corpus";

/// [`resolve`], then the references the corpus lacks (all of them without a corpus) looked up
/// with `lookup`: on arXiv, then their code on GitHub (see [`crate::online`]). Generic
/// references and those without a parsed title are not looked up; nor any beyond the lookup's
/// cap. A failure is that reference's reason, the others go on. With a cache-only lookup, a
/// reference whose answer is not cached keeps the offline reason.
pub async fn resolve_online(
    paper: &Paper,
    corpus: Option<&Corpus>,
    top: usize,
    lookup: &mut Lookup,
) -> Lineage {
    let mut pass = corpus_pass(paper, corpus);
    // A repository's files are chosen by their relevance to what the entries are ranked by.
    let (query, _) = ranking_query(paper);
    let online = lookup.is_online();
    let reason = |online_part: Option<String>| {
        let mut parts: Vec<String> = Vec::new();
        if corpus.is_some() {
            parts.push(NOT_IN_CORPUS.into());
        }
        parts.extend(online_part);
        if parts.is_empty() {
            "not looked up".into()
        } else {
            parts.join("; ")
        }
    };
    let when_online = |s: String| online.then_some(s);
    let mut unresolved = Vec::new();
    for reference in std::mem::take(&mut pass.unresolved) {
        let generic = generic_kind(&reference);
        let skip = if generic.is_some() {
            Some("not looked up online: a tool, not method lineage".to_string())
        } else if reference.title.is_none() {
            Some("not looked up online: its title could not be parsed".into())
        } else if !lookup.can_look_up() {
            Some(format!(
                "not looked up online: the cap of {} look-ups per paper is reached",
                lookup.settings.max_lookups
            ))
        } else {
            None
        };
        if let Some(why) = skip {
            unresolved.push(Unresolved {
                reason: reason(when_online(why)),
                reference,
                generic,
            });
            continue;
        }
        let (found, m) = match lookup.find_paper(&reference, paper).await {
            PaperOutcome::Found(found, m) => (found, m),
            PaperOutcome::NotFound(why) | PaperOutcome::Failed(why) => {
                unresolved.push(Unresolved {
                    reason: reason(Some(why)),
                    reference,
                    generic,
                });
                continue;
            }
            PaperOutcome::NotCached => {
                unresolved.push(Unresolved {
                    reason: reason(None),
                    reference,
                    generic,
                });
                continue;
            }
        };
        let id = format!("arxiv:{}", found.entry.id);
        if let Some(f) = pass.found.iter_mut().find(|f| f.id == id) {
            f.cited_as.push(reference.raw.clone());
            continue;
        }
        let (code_files, code_from, code_url, code_note) =
            match lookup.find_code(&found, &query).await {
                Ok(code) if !code.files.is_empty() => {
                    (code.files, Some(Source::Github), Some(code.repo_url), None)
                }
                Ok(code) => (
                    Vec::new(),
                    None,
                    Some(code.repo_url),
                    Some(format!("no code file fetched ({})", code.why)),
                ),
                Err(why) => (Vec::new(), None, None, Some(why)),
            };
        pass.found.push(Found {
            id,
            code_root: Some(found.dir.clone()),
            code_files,
            m,
            cited_as: vec![reference.raw.clone()],
            resolved_in: Source::Arxiv,
            url: Some(found.entry.abs_url.clone()),
            code_from,
            code_url,
            code_note,
            paper: found.paper,
        });
    }
    let report = lookup.report();
    finish(paper, corpus, top, pass, unresolved, Some(report))
}

/// A resolved reference before ranking.
struct Found {
    id: String,
    paper: Paper,
    code_root: Option<PathBuf>,
    code_files: Vec<String>,
    m: Match,
    cited_as: Vec<String>,
    resolved_in: Source,
    url: Option<String>,
    code_from: Option<Source>,
    code_url: Option<String>,
    code_note: Option<String>,
}

/// The references resolved in the corpus, and those it lacks.
struct CorpusPass<'a> {
    /// The corpus entries a reference may name (the paper itself left out).
    candidates: Vec<&'a Entry>,
    found: Vec<Found>,
    unresolved: Vec<Reference>,
    excluded_self: Option<String>,
}

fn corpus_pass<'a>(paper: &Paper, corpus: Option<&'a Corpus>) -> CorpusPass<'a> {
    let is_self = |e: &Entry| {
        same_file(&e.paper.path, &paper.path)
            || jaccard(&title_words(&e.paper.title), &title_words(&paper.title)) >= TITLE_MATCH
    };
    let entries: &[Entry] = corpus.map_or(&[], |c| &c.entries);
    let excluded_self = entries.iter().find(|e| is_self(e)).map(|e| e.id.clone());
    let candidates: Vec<&Entry> = entries.iter().filter(|e| !is_self(e)).collect();

    let mut found: Vec<Found> = Vec::new();
    let mut unresolved = Vec::new();
    for reference in &paper.references {
        let best = candidates
            .iter()
            .filter_map(|e| match_reference(reference, &e.paper).map(|m| (*e, m)))
            .max_by(|a, b| a.1.similarity.total_cmp(&b.1.similarity));
        let Some((entry, m)) = best else {
            unresolved.push(reference.clone());
            continue;
        };
        // A second reference to the same entry joins the first.
        match found.iter_mut().find(|f| f.id == entry.id) {
            Some(f) => f.cited_as.push(reference.raw.clone()),
            None => found.push(Found {
                id: entry.id.clone(),
                paper: entry.paper.clone(),
                code_root: entry.code_root.clone(),
                code_files: entry.code_files.clone(),
                m,
                cited_as: vec![reference.raw.clone()],
                resolved_in: Source::Corpus,
                url: None,
                code_from: (!entry.code_files.is_empty()).then_some(Source::Corpus),
                code_url: None,
                code_note: None,
            }),
        }
    }
    CorpusPass {
        candidates,
        found,
        unresolved,
        excluded_self,
    }
}

/// Rank what was found against the paper's method and keep `top`.
fn finish(
    paper: &Paper,
    corpus: Option<&Corpus>,
    top: usize,
    pass: CorpusPass,
    unresolved: Vec<Unresolved>,
    online: Option<OnlineReport>,
) -> Lineage {
    let (query, query_label) = ranking_query(paper);
    // Term rarity is judged over every candidate of the corpus and every paper found online.
    let background: Vec<&str> = pass
        .candidates
        .iter()
        .map(|e| e.paper.text.as_str())
        .chain(
            pass.found
                .iter()
                .filter(|f| f.resolved_in != Source::Corpus)
                .map(|f| f.paper.text.as_str()),
        )
        .collect();
    let texts: Vec<&str> = pass.found.iter().map(|f| f.paper.text.as_str()).collect();
    let scores = bm25_scores(&background, &texts, &query);
    let mut ranked: Vec<Resolved> = pass
        .found
        .into_iter()
        .zip(scores)
        .map(|(f, score)| Resolved {
            rank: 0,
            score,
            entry: f.id,
            paper_file: f.paper.path,
            title: f.paper.title,
            authors: f.paper.authors,
            year: f.paper.year,
            code_root: f.code_root,
            code_files: f.code_files,
            matched_by: f.m.matched_by,
            similarity: f.m.similarity,
            authors_in_common: f.m.authors_in_common,
            cited_as: f.cited_as,
            resolved_in: f.resolved_in,
            url: f.url,
            code_from: f.code_from,
            code_url: f.code_url,
            code_note: f.code_note,
        })
        .collect();
    // Stable: equal scores keep the reference list's order.
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    for (i, r) in ranked.iter_mut().enumerate() {
        r.rank = i + 1;
    }
    let below_top = ranked.split_off(top.min(ranked.len()));
    Lineage {
        paper: paper.path.clone(),
        title: paper.title.clone(),
        corpus: corpus.map(|c| c.dir.clone()),
        query: query_label,
        top,
        resolved: ranked,
        below_top,
        unresolved,
        excluded_self: pass.excluded_self,
        skipped: corpus.map(|c| c.skipped.clone()).unwrap_or_default(),
        online,
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The text the entries are ranked against, and what it is: the Method section, or the whole
/// paper without its reference list (which names every cited entry alike).
fn ranking_query(paper: &Paper) -> (String, String) {
    if let Some(method) = paper.method_section() {
        return (
            format!("{}\n{}", method.heading, method.body),
            format!("the section \"{}\"", method.heading),
        );
    }
    let text = paper
        .sections
        .iter()
        .filter(|s| !crate::document::is_reference_heading(&s.heading))
        .map(|s| format!("{}\n{}", s.heading, s.body))
        .collect::<Vec<_>>()
        .join("\n");
    (
        text,
        "the whole paper (no Method or Approach section)".into(),
    )
}

/// BM25 of each of `texts` against `query`, with term statistics from `background` (not only
/// the found ones: rarity is judged over the corpus).
pub(crate) fn bm25_scores(background: &[&str], texts: &[&str], query: &str) -> Vec<f64> {
    if texts.is_empty() {
        return Vec::new();
    }
    let embedder = EmbedderBuilder::<u32, WordTokenizer>::with_tokenizer_and_fit_to_corpus(
        WordTokenizer,
        background,
    )
    .build();
    let mut scorer = Scorer::<usize>::new();
    for (i, text) in texts.iter().enumerate() {
        scorer.upsert(&i, embedder.embed(text));
    }
    let query = embedder.embed(query);
    (0..texts.len())
        .map(|i| f64::from(scorer.score(&i, &query).unwrap_or(0.0)))
        .collect()
}

/// Words that carry no topic.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is",
    "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "we", "were", "which",
    "with", "our", "their", "these", "can", "not", "each", "all", "one", "two", "than", "then",
    "into", "when", "where", "how", "what", "also", "but", "over", "per", "use", "used", "using",
];

/// Prose tokens for BM25: lowercase alphanumeric words of two letters or more, numbers and stop
/// words dropped, a plural `s` stripped (`labels` and `label` are one term).
#[derive(Debug, Clone, Copy, Default)]
pub struct WordTokenizer;

impl Tokenizer for WordTokenizer {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 2 && !w.chars().all(|c| c.is_ascii_digit()))
            .filter(|w| !STOP_WORDS.contains(w))
            .map(|w| match w.strip_suffix('s') {
                Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_string(),
                _ => w.to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper(title: &str, authors: &[&str]) -> Paper {
        let byline = authors
            .iter()
            .map(|a| format!("A. {a}"))
            .collect::<Vec<_>>()
            .join(", ");
        Paper::from_markdown(
            Path::new("x.md"),
            format!("# {title}\n*{byline} — 2024*\n\nText.\n"),
        )
    }

    fn reference(raw: &str) -> Reference {
        Reference::parse(raw)
    }

    const SOFT: &str = "Softened Targets: Calibrating Classifiers by Smoothing One-Hot Labels";

    #[test]
    fn titles_match_regardless_of_case_and_punctuation() {
        let entry = paper(SOFT, &["Ashdown", "Okafor"]);
        let r = reference(
            "Ashdown, R. and Okafor, M. (2024). softened targets - calibrating classifiers by \
             smoothing one hot labels. Workshop.",
        );
        let m = match_reference(&r, &entry).unwrap();
        assert_eq!(m.matched_by, MatchedBy::Title);
        assert_eq!(m.similarity, 1.0);
        assert_eq!(m.authors_in_common, vec!["Ashdown", "Okafor"]);
    }

    #[test]
    fn the_threshold_allows_one_word_and_needs_authors_beyond() {
        // One word dropped of five: Jaccard 4/5 = 0.8, a match on the title alone.
        let entry = paper("Mixing Beyond Empirical Risk Minimization", &["Tan"]);
        let r = reference("Lee, K. (2018). Beyond Empirical Risk Minimization. ICLR.");
        assert_eq!(
            match_reference(&r, &entry).unwrap().matched_by,
            MatchedBy::Title
        );
        // Two words different of six (Jaccard 4/8): only with a shared author.
        let entry = paper("Label Smoothing Helps Deep Image Classifiers", &["Tan"]);
        let r = reference("Tan, S. (2020). Label Smoothing Hurts Deep Text Classifiers. ACL.");
        assert_eq!(
            match_reference(&r, &entry).unwrap().matched_by,
            MatchedBy::TitleAndAuthors
        );
        let r = reference("Roe, S. (2020). Label Smoothing Hurts Deep Text Classifiers. ACL.");
        assert_eq!(match_reference(&r, &entry), None);
        // Titles that share a few common words are different papers.
        let entry = paper("Identity Mappings in Deep Residual Networks", &["He"]);
        let r = reference("He, K. (2016). Deep Residual Learning for Image Recognition. CVPR.");
        assert_eq!(match_reference(&r, &entry), None);
    }

    #[test]
    fn a_citation_without_the_subtitle_needs_an_author() {
        let entry = paper(SOFT, &["Ashdown", "Okafor"]);
        let r = reference("Ashdown, R. (2024). Softened Targets. Workshop.");
        assert_eq!(
            match_reference(&r, &entry).unwrap().matched_by,
            MatchedBy::TitleAndAuthors
        );
        let r = reference("Smith, J. (2024). Softened Targets. Workshop.");
        assert_eq!(match_reference(&r, &entry), None);
    }

    #[test]
    fn an_unparsed_reference_matches_by_the_whole_title_in_its_text() {
        let entry = paper(SOFT, &["Ashdown"]);
        let r =
            reference("see Softened Targets: Calibrating Classifiers by Smoothing One-Hot Labels");
        assert_eq!(r.title, None);
        assert_eq!(
            match_reference(&r, &entry).unwrap().matched_by,
            MatchedBy::TitleInReference
        );
        // A short title is too common to be looked for in free text.
        let entry = paper("Dropout", &["Srivastava"]);
        assert_eq!(match_reference(&reference("we use dropout"), &entry), None);
    }

    #[test]
    fn tooling_references_are_generic() {
        let adam = reference(
            "Kingma, D. and Ba, J. (2015). Adam: A Method for Stochastic Optimization. ICLR.",
        );
        assert_eq!(generic_kind(&adam), Some("optimizer"));
        let cifar = reference(
            "Krizhevsky, A. (2009). Learning Multiple Layers of Features from Tiny Images. Tech report.",
        );
        assert_eq!(generic_kind(&cifar), Some("dataset"));
        let method = reference("Tan, S. (2024). Blended Pairs. ICML.");
        assert_eq!(generic_kind(&method), None);
    }

    #[test]
    fn tokens_drop_stop_words_numbers_and_plurals() {
        assert_eq!(
            WordTokenizer.tokenize("The labels of 10 classes, smoothed; a Label!"),
            vec!["label", "classe", "smoothed", "label"]
        );
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn resolve_excludes_the_paper_itself_and_ranks_by_the_method() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let citing = "# Blended Pairs\n*L. Verhoeven, S. Tan — 2024*\n\n## Method\nWe blend \
inputs and smooth labels with a temperature.\n\n## References\n\
1. Okafor, M. (2023). Temperature Scaling for Tired Networks Revisited. Venue.\n\
2. Ashdown, R. and Okafor, M. (2024). Softened Targets: Calibrating Classifiers by Smoothing \
One-Hot Labels. Workshop.\n3. Kingma, D. and Ba, J. (2015). Adam: A Method for Stochastic \
Optimization. ICLR.\n4. Verhoeven, L. (2024). Blended Pairs. Preprint.\n\
5. Ashdown et al., Softened Targets: Calibrating Classifiers by Smoothing One-Hot Labels, 2024\n";
        write(d, "blended/paper.md", citing);
        write(
            d,
            "softened/paper.md",
            &format!(
                "# {SOFT}\n*R. Ashdown, M. Okafor — 2024*\n\nWe smooth labels: smooth \
labels smooth labels.\n"
            ),
        );
        write(d, "softened/code/smooth.py", "def smooth(): pass\n");
        write(d, "softened/code/__pycache__/smooth.py", "");
        write(d, "softened/mutated/smooth.py", "");
        write(d, "softened/notes.md", "not code");
        write(
            d,
            "temperature.md",
            "# Temperature Scaling for Tired Networks Revisited\n*M. Okafor — 2023*\n\nA \
temperature divides logits.\n",
        );
        write(d, "README.md", "# About this corpus\n");
        write(d, "empty/notes.txt", "no paper here");

        let corpus = Corpus::load(d).unwrap();
        let ids: Vec<&str> = corpus.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["blended", "softened", "temperature.md"]);
        assert_eq!(corpus.skipped.len(), 1);
        assert!(corpus.skipped[0].reason.contains("no paper.md"));
        assert_eq!(corpus.entries[1].code_files, vec!["code/smooth.py"]);

        let paper = Paper::load(&d.join("blended/paper.md")).unwrap();
        let lineage = resolve(&paper, &corpus, 1);
        assert_eq!(lineage.excluded_self.as_deref(), Some("blended"));
        assert_eq!(lineage.query, "the section \"Method\"");
        // Both cited entries resolve; the one about smoothing labels ranks first.
        assert_eq!(lineage.resolved.len(), 1);
        assert_eq!(lineage.resolved[0].entry, "softened");
        assert_eq!(lineage.resolved[0].rank, 1);
        assert_eq!(lineage.below_top.len(), 1);
        assert_eq!(lineage.below_top[0].entry, "temperature.md");
        assert_eq!(lineage.below_top[0].rank, 2);
        assert!(lineage.resolved[0].score > lineage.below_top[0].score);
        // Cited twice, listed once.
        assert_eq!(lineage.resolved[0].cited_as.len(), 2);
        // Adam is generic; the self-citation is not in the corpus once the paper is left out.
        let generic: Vec<Option<&str>> = lineage.unresolved.iter().map(|u| u.generic).collect();
        assert_eq!(generic, vec![Some("optimizer"), None]);
        assert!(
            lineage
                .unresolved
                .iter()
                .all(|u| u.reason == "not in the corpus")
        );
    }

    #[test]
    fn a_corpus_without_papers_is_an_error_that_says_what_is_expected() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "x/data.csv", "1,2");
        let e = Corpus::load(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("no paper in the corpus (1 entries could not be read)"),
            "{e}"
        );
        let e = Corpus::load(&dir.path().join("nope"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope: the corpus is not a directory"), "{e}");
    }
}
