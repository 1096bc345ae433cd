//! Lineage's look-ups on the network (`--online`), for the references a local corpus does not
//! hold: the paper on arXiv (its export API, matched by title and authors with the corpus's own
//! rules, [`match_reference`]; the abstract stands for its text), then its code on GitHub (a
//! repository linked from the abstract or the authors' comment, else the best repository search
//! hit that names the paper, or whose README cites it), of which the README and the code files
//! most relevant to the citing paper are fetched ([`choose`]), size-capped: chosen from the
//! repository's whole file list (one git-trees request), or from its top directory when the
//! tree cannot be had whole.
//!
//! Everything fetched is kept in a cache directory ([`fetch`]); each paper found is written
//! there as a corpus entry, `papers/arxiv-ID/paper.md` with its code under `code/`, so that its
//! code is read like a corpus entry's. Without `--online` the cache alone is read: an earlier
//! online run's answers are used, nothing else is asked.

pub mod arxiv;
pub mod choose;
#[cfg(feature = "fake")]
pub mod fake;
pub mod fetch;
pub mod github;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::document::{Paper, Reference, surnames};
use crate::lineage::{Match, TITLE_MATCH, jaccard, match_reference, title_words};
use arxiv::ArxivEntry;
use choose::RepoFile;
use fetch::{FetchError, Fetcher, NetworkSettings, Service};

use crate::write_atomically;

/// arXiv's export API.
pub const DEFAULT_ARXIV_URL: &str = "https://export.arxiv.org/api/query";
/// GitHub's REST API.
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";
/// Where GitHub serves a repository's files as they are (`OWNER/REPO/BRANCH/PATH`).
pub const DEFAULT_GITHUB_RAW_URL: &str = "https://raw.githubusercontent.com";
/// The cache, relative to the current directory.
pub const DEFAULT_CACHE_DIR: &str = ".reprolab/lineage-cache";

/// Caps on answers' sizes.
const MAX_ARXIV_BYTES: usize = 4 * 1024 * 1024;
const MAX_GITHUB_JSON_BYTES: usize = 2 * 1024 * 1024;
/// A git tree: GitHub truncates its answer at 7 MB itself.
const MAX_GITHUB_TREE_BYTES: usize = 8 * 1024 * 1024;

/// What is looked up where, and how much.
#[derive(Debug, Clone)]
pub struct Settings {
    pub arxiv_url: String,
    pub github_api_url: String,
    /// Where the files of a git tree are downloaded; `None`: [`Settings::github_raw_base`].
    pub github_raw_url: Option<String>,
    pub cache_dir: PathBuf,
    /// References looked up per paper, at most.
    pub max_lookups: usize,
    /// arXiv results asked for per reference.
    pub arxiv_results: usize,
    /// Files fetched per repository, at most (its README included).
    pub max_code_files: usize,
    /// A file larger than this is not fetched.
    pub max_file_bytes: u64,
}

impl Settings {
    pub fn new(cache_dir: &Path) -> Settings {
        Settings {
            arxiv_url: DEFAULT_ARXIV_URL.into(),
            github_api_url: DEFAULT_GITHUB_API_URL.into(),
            github_raw_url: None,
            cache_dir: cache_dir.to_path_buf(),
            max_lookups: 20,
            arxiv_results: 5,
            max_code_files: 8,
            max_file_bytes: 100_000,
        }
    }

    /// Where files found in a git tree are downloaded: the raw URL given, else GitHub's own
    /// for GitHub's API, else `API/raw`: an API stood in for (a mirror, a test server) serves
    /// the files too, and nothing is asked of github.com behind its back.
    pub fn github_raw_base(&self) -> String {
        let api = self.github_api_url.trim_end_matches('/');
        match &self.github_raw_url {
            Some(raw) => raw.trim_end_matches('/').to_string(),
            None if api == DEFAULT_GITHUB_API_URL => DEFAULT_GITHUB_RAW_URL.into(),
            None => format!("{api}/raw"),
        }
    }
}

/// What the look-ups did, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OnlineReport {
    /// Whether the network could be used (`--online`); false: the cache alone was read.
    pub network: bool,
    pub arxiv_url: String,
    pub github_api_url: String,
    pub cache: PathBuf,
    /// References looked up (on the network or in the cache).
    pub looked_up: usize,
    pub max_lookups: usize,
    /// Requests sent (retries included) and answers read from the cache.
    pub requests: usize,
    pub from_cache: usize,
}

/// A paper found on arXiv, written into the cache as a corpus entry.
#[derive(Debug, Clone)]
pub struct OnlinePaper {
    pub entry: ArxivEntry,
    /// Its title, authors' surnames, year, and the abstract as its text.
    pub paper: Paper,
    /// `CACHE/papers/arxiv-ID`: `paper.md`, and the code under `code/`.
    pub dir: PathBuf,
}

/// What looking a reference up on arXiv gave.
#[derive(Debug)]
pub enum PaperOutcome {
    Found(Box<OnlinePaper>, Match),
    /// arXiv answered; none of its papers is the reference.
    NotFound(String),
    /// The look-up failed (network, status, an answer that cannot be read).
    Failed(String),
    /// Without the network: the cache has no answer for it.
    NotCached,
}

/// A paper's code found on GitHub.
#[derive(Debug, Clone, PartialEq)]
pub struct Code {
    pub repo_url: String,
    /// Relative to the paper's directory (`code/README.md`, `code/train.py`).
    pub files: Vec<String>,
    /// Why this repository is the paper's.
    pub why: String,
}

/// The look-ups of one run.
#[derive(Debug)]
pub struct Lookup {
    pub settings: Settings,
    fetcher: Fetcher,
    looked_up: usize,
}

impl Lookup {
    /// Through the cache, then the network.
    pub fn online(settings: Settings, network: NetworkSettings) -> Result<Lookup, String> {
        let fetcher = Fetcher::online(&settings.cache_dir, network)?;
        Ok(Lookup {
            settings,
            fetcher,
            looked_up: 0,
        })
    }

    /// The cache alone (no network at all).
    pub fn cache_only(settings: Settings) -> Lookup {
        let fetcher = Fetcher::cache_only(&settings.cache_dir);
        Lookup {
            settings,
            fetcher,
            looked_up: 0,
        }
    }

    pub fn is_online(&self) -> bool {
        self.fetcher.is_online()
    }

    /// Whether another reference may be looked up ([`Settings::max_lookups`]).
    pub fn can_look_up(&self) -> bool {
        self.looked_up < self.settings.max_lookups
    }

    pub fn report(&self) -> OnlineReport {
        OnlineReport {
            network: self.is_online(),
            arxiv_url: self.settings.arxiv_url.clone(),
            github_api_url: self.settings.github_api_url.clone(),
            cache: self.settings.cache_dir.clone(),
            looked_up: self.looked_up,
            max_lookups: self.settings.max_lookups,
            requests: self.fetcher.stats.requests,
            from_cache: self.fetcher.stats.from_cache,
        }
    }

    /// `reference` on arXiv, by its title; `citing` (the paper whose references these are) is
    /// never its match. The reference must have a title.
    pub async fn find_paper(&mut self, reference: &Reference, citing: &Paper) -> PaperOutcome {
        let Some(title) = reference.title.as_deref() else {
            return PaperOutcome::NotFound("its title could not be parsed".into());
        };
        self.looked_up += 1;
        let url =
            match arxiv::query_url(&self.settings.arxiv_url, title, self.settings.arxiv_results) {
                Ok(u) => u,
                Err(e) => return PaperOutcome::Failed(e),
            };
        let body = match self
            .fetcher
            .get(&url, Service::Arxiv, MAX_ARXIV_BYTES)
            .await
        {
            Ok(b) => b,
            Err(FetchError::NotCached { .. }) => return PaperOutcome::NotCached,
            Err(e) => return PaperOutcome::Failed(format!("arXiv look-up failed: {e}")),
        };
        let entries = match arxiv::parse_feed(&String::from_utf8_lossy(&body)) {
            Ok(e) => e,
            Err(e) => {
                self.fetcher.forget(&url);
                return PaperOutcome::Failed(format!("arXiv's answer is unusable: {e}"));
            }
        };
        let citing_words = title_words(&citing.title);
        let best = entries
            .iter()
            .map(|e| self.paper_of(e))
            .filter(|p| jaccard(&title_words(&p.paper.title), &citing_words) < TITLE_MATCH)
            .filter_map(|p| match_reference(reference, &p.paper).map(|m| (p, m)))
            .max_by(|a, b| a.1.similarity.total_cmp(&b.1.similarity));
        let Some((found, m)) = best else {
            return PaperOutcome::NotFound(format!(
                "not on arXiv (no title matched among {} results)",
                entries.len()
            ));
        };
        if let Err(e) = write_atomically(&found.dir.join("paper.md"), found.paper.text.as_bytes()) {
            return PaperOutcome::Failed(format!(
                "cannot write {} into the cache: {e}",
                found.dir.display()
            ));
        }
        PaperOutcome::Found(Box::new(found), m)
    }

    /// An arXiv entry as a paper of the cache.
    fn paper_of(&self, entry: &ArxivEntry) -> OnlinePaper {
        let dir = self
            .settings
            .cache_dir
            .join("papers")
            .join(format!("arxiv-{}", entry.id.replace('/', "_")));
        let byline = match entry.year {
            Some(y) => format!("*{} — {y}*", entry.authors.join(", ")),
            None => format!("*{}*", entry.authors.join(", ")),
        };
        let text = format!(
            "# {}\n{byline}\n\n<{}>\n\n## Abstract\n{}\n",
            entry.title, entry.abs_url, entry.summary
        );
        let mut paper = Paper::from_markdown(&dir.join("paper.md"), text);
        paper.authors = surnames(&entry.authors.join(", "));
        paper.year = entry.year;
        OnlinePaper {
            entry: entry.clone(),
            paper,
            dir,
        }
    }

    /// The code of `found` on GitHub; `Err` with why when no repository is the paper's or a
    /// look-up failed. A search hit that does not name the paper itself must have a README that
    /// cites it (its arXiv id or its whole title): nothing else of it is fetched otherwise. The
    /// files fetched are those most relevant to `query` (the citing paper's method) and to the
    /// found paper's own abstract.
    pub async fn find_code(&mut self, found: &OnlinePaper, query: &str) -> Result<Code, String> {
        let e = &found.entry;
        let linked = github::linked_repos(&format!(
            "{} {}",
            e.summary,
            e.comment.as_deref().unwrap_or("")
        ));
        let api = self.settings.github_api_url.clone();
        let (full_name, repo_url, why, mut confirmed, branch) = if let Some(full) = linked.first() {
            let url = format!("https://github.com/{full}");
            (
                full.clone(),
                url,
                "linked from its arXiv page".to_string(),
                true,
                None,
            )
        } else {
            let url = github::search_url(&api, &e.title)?;
            let repos = self
                .get_github_json(&url, MAX_GITHUB_JSON_BYTES, github::parse_search)
                .await?;
            let named = repos
                .iter()
                .find_map(|r| github::repo_names_paper(r, &e.title, &e.id).map(|w| (r, w)));
            let hit = |r: &github::Repo, why: &str, confirmed: bool| {
                let branch = r.default_branch.clone();
                (
                    r.full_name.clone(),
                    r.html_url.clone(),
                    why.to_string(),
                    confirmed,
                    branch,
                )
            };
            match (named, repos.first()) {
                (Some((r, why)), _) => hit(r, why, true),
                (None, Some(r)) => hit(r, "its README cites the paper", false),
                (None, None) => return Err("no repository found on GitHub".into()),
            }
        };
        let files = self.repo_files(&full_name, branch).await?;
        let relevant_to = format!("{query}\n{}\n{}", e.title, e.summary);
        let picks = choose::pick_files(
            &files,
            &relevant_to,
            self.settings.max_code_files,
            self.settings.max_file_bytes,
        );
        let not_named = || {
            format!(
                "no repository found on GitHub (the best search hit, {full_name}, does not name \
                 the paper)"
            )
        };
        if !confirmed
            && !picks
                .first()
                .is_some_and(|p| !p.path.contains('/') && github::is_readme_name(&p.path))
        {
            return Err(not_named());
        }
        let code_dir = found.dir.join("code");
        let _ = std::fs::remove_dir_all(&code_dir);
        let mut fetched = Vec::new();
        for pick in picks {
            let cap = self.settings.max_file_bytes as usize;
            let body = match self.get_github(&pick.download_url, Service::Raw, cap).await {
                Ok(b) => b,
                Err(err) if !confirmed => return Err(err),
                Err(err) => {
                    tracing::warn!("{}: {} not fetched: {err}", full_name, pick.path);
                    continue;
                }
            };
            let text = String::from_utf8_lossy(&body);
            if !confirmed {
                // The README, fetched first: it must cite the paper.
                if !github::readme_cites(&text, &e.title, &e.id) {
                    return Err(not_named());
                }
                confirmed = true;
            }
            write_atomically(&code_dir.join(&pick.path), text.as_bytes())
                .map_err(|err| format!("cannot write {} into the cache: {err}", pick.path))?;
            fetched.push(format!("code/{}", pick.path));
        }
        Ok(Code {
            repo_url,
            files: fetched,
            why,
        })
    }

    /// The repository's files: all of them (its git tree, in one request) when GitHub gives the
    /// tree whole; else, as a fallback, its top directory (the contents API).
    async fn repo_files(
        &mut self,
        full_name: &str,
        branch: Option<String>,
    ) -> Result<Vec<RepoFile>, String> {
        match self.tree_files(full_name, branch).await {
            Ok(files) => return Ok(files),
            Err(why) => tracing::info!("{full_name}: {why}; only its top directory is read"),
        }
        let url = github::contents_url(&self.settings.github_api_url, full_name);
        let listing = self
            .get_github_json(&url, MAX_GITHUB_JSON_BYTES, github::parse_contents)
            .await?;
        Ok(choose::from_listing(&listing))
    }

    /// Every file of the repository's `branch` (its default branch, asked for when a search
    /// hit did not say it); `Err` when the tree is not to be had whole.
    async fn tree_files(
        &mut self,
        full_name: &str,
        branch: Option<String>,
    ) -> Result<Vec<RepoFile>, String> {
        let api = self.settings.github_api_url.clone();
        let branch = match branch {
            Some(b) => b,
            None => {
                let url = github::repo_url(&api, full_name);
                self.get_github_json(&url, MAX_GITHUB_JSON_BYTES, github::parse_default_branch)
                    .await?
            }
        };
        let url = github::tree_url(&api, full_name, &branch)?;
        let tree = self
            .get_github_json(&url, MAX_GITHUB_TREE_BYTES, github::parse_tree)
            .await?;
        if tree.truncated {
            return Err("GitHub truncated its file tree".into());
        }
        choose::from_tree(&tree, &self.settings.github_raw_base(), full_name, &branch)
    }

    /// An answer of GitHub's API read by `parse`; one that cannot be read is dropped from the
    /// cache, so that a later run asks again.
    async fn get_github_json<T>(
        &mut self,
        url: &str,
        cap: usize,
        parse: fn(&[u8]) -> Result<T, String>,
    ) -> Result<T, String> {
        let body = self.get_github(url, Service::GitHubApi, cap).await?;
        parse(&body).inspect_err(|_| self.fetcher.forget(url))
    }

    async fn get_github(
        &mut self,
        url: &str,
        service: Service,
        cap: usize,
    ) -> Result<Vec<u8>, String> {
        self.fetcher
            .get(url, service, cap)
            .await
            .map_err(|e| match e {
                FetchError::NotCached { .. } => "GitHub: not in the cache".to_string(),
                e => format!("GitHub look-up failed: {e}"),
            })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use reprolab_llm::{RetryPolicy, Secret};

    use super::fake::{FakeAnswer, FakeWeb};
    use super::*;
    use crate::lineage::{Corpus, Source, resolve, resolve_online};

    fn settings(web: &FakeWeb, cache: &Path) -> Settings {
        Settings {
            arxiv_url: format!("{}/api/query", web.url()),
            github_api_url: web.url(),
            ..Settings::new(cache)
        }
    }

    fn network(web: &FakeWeb, token: Option<&str>) -> NetworkSettings {
        NetworkSettings {
            timeout: Duration::from_secs(2),
            retry: RetryPolicy {
                max_attempts: 3,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(20),
            },
            arxiv_delay: Duration::ZERO,
            github_token: token.map(Secret::new),
            github_api_url: web.url(),
            no_proxy: true,
        }
    }

    fn online(web: &FakeWeb, cache: &Path, token: Option<&str>) -> Lookup {
        Lookup::online(settings(web, cache), network(web, token)).unwrap()
    }

    /// An arXiv answer with one entry.
    fn feed(id: &str, title: &str, authors: &[&str], summary: &str, comment: &str) -> String {
        let authors: String = authors
            .iter()
            .map(|a| format!("<author><name>{a}</name></author>"))
            .collect();
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
<title>ArXiv Query</title>
<entry><id>http://arxiv.org/abs/{id}v1</id><published>2018-01-02T00:00:00Z</published>
<title>{title}</title><summary>{summary}</summary>{authors}
<arxiv:comment>{comment}</arxiv:comment>
<link href="http://arxiv.org/abs/{id}v1" rel="alternate" type="text/html"/></entry>
</feed>"#
        )
    }

    const EMPTY_FEED: &str =
        r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>ArXiv Query</title></feed>"#;

    fn listing(web: &FakeWeb, repo: &str, files: &[(&str, usize)]) -> String {
        let items: Vec<serde_json::Value> = files
            .iter()
            .map(|(name, size)| {
                serde_json::json!({"name": name, "path": name, "type": "file", "size": size,
                    "download_url": format!("{}/raw/{repo}/{name}", web.url())})
            })
            .chain([
                serde_json::json!({"name": "models", "path": "models", "type": "dir",
                "size": 0, "download_url": null}),
            ])
            .collect();
        serde_json::Value::Array(items).to_string()
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const CITING: &str = "# Blended Pairs\n*L. Verhoeven, S. Tan — 2024*\n\n## Method\nWe blend \
pairs of inputs and their labels with a convex combination, and smooth the labels.\n\n\
## References\n\
1. Ashdown, R. and Okafor, M. (2024). Softened Targets: Calibrating Classifiers by Smoothing \
One-Hot Labels. Workshop.\n\
2. Zhang, H. and Cisse, M. (2018). mixup: Beyond Empirical Risk Minimization. ICLR.\n\
3. Okafor, M. (2023). Temperature Scaling for Tired Networks Revisited. Venue.\n\
4. Kingma, D. and Ba, J. (2015). Adam: A Method for Stochastic Optimization. ICLR.\n\
5. Roe, P. (2021). Broken Servers Considered Harmful. Venue.\n";

    /// A corpus with the softened-targets paper, and the citing paper.
    fn corpus_and_paper(d: &Path) -> (Corpus, Paper) {
        write(
            d,
            "corpus/softened/paper.md",
            "# Softened Targets: Calibrating Classifiers by Smoothing One-Hot Labels\n\
*R. Ashdown, M. Okafor — 2024*\n\nWe smooth labels.\n",
        );
        write(d, "corpus/softened/smooth.py", "def smooth(): pass\n");
        write(d, "blended.md", CITING);
        (
            Corpus::load(&d.join("corpus")).unwrap(),
            Paper::load(&d.join("blended.md")).unwrap(),
        )
    }

    fn mixup_server() -> FakeWeb {
        let big = big_file();
        let web = FakeWeb::start();
        web.route(
            "/api/query",
            &["mixup beyond empirical risk minimization"],
            FakeAnswer::atom(feed(
                "1710.09412",
                "mixup: Beyond Empirical Risk Minimization",
                &["Hongyi Zhang", "Moustapha Cisse"],
                "We propose mixup: training on convex combinations of pairs of examples and \
                 their labels.",
                "code: https://github.com/fb/mixup-cifar10",
            )),
        );
        web.route(
            "/api/query",
            &["temperature scaling"],
            FakeAnswer::atom(EMPTY_FEED),
        );
        web.route(
            "/api/query",
            &["broken servers"],
            FakeAnswer::status(503, "down for maintenance"),
        );
        web.repository("fb/mixup-cifar10", "master", &mixup_repository(&big));
        web
    }

    /// The files of mixup's repository: its model in a package folder, beside tests, docs, a
    /// notebook, a licence and a file over the size cap.
    fn mixup_repository(big: &str) -> Vec<(&'static str, &str)> {
        vec![
            ("README.md", "# mixup\nhttps://arxiv.org/abs/1710.09412\n"),
            ("train.py", "def mixup(x, y, lam): return lam * x\n"),
            ("LICENSE", "MIT"),
            ("big.py", big),
            (
                "mixup/models/preact_resnet.py",
                "class PreActResNet: pass  # convex combinations\n",
            ),
            ("tests/test_mixup.py", "def test_mixup(): pass\n"),
            ("docs/mixup.py", "# documentation\n"),
            ("notebooks/mixup.ipynb", "{}"),
        ]
    }

    /// Over the file cap (100 kB).
    fn big_file() -> String {
        "x".repeat(100_001)
    }

    const MIXUP_FILES: [&str; 3] = [
        "code/README.md",
        "code/mixup/models/preact_resnet.py",
        "code/train.py",
    ];

    #[tokio::test]
    async fn references_the_corpus_lacks_are_found_on_arxiv_with_their_code_then_cached() {
        let dir = tempfile::tempdir().unwrap();
        let (corpus, paper) = corpus_and_paper(dir.path());
        let cache = dir.path().join("cache");
        let web = mixup_server();
        let mut lookup = online(&web, &cache, Some("tok-123"));
        let l = resolve_online(&paper, Some(&corpus), 5, &mut lookup).await;

        let ids: Vec<&str> = l.resolved.iter().map(|r| r.entry.as_str()).collect();
        assert_eq!(ids.len(), 2, "{ids:?}");
        let corpus_row = l.resolved.iter().find(|r| r.entry == "softened").unwrap();
        assert_eq!(corpus_row.resolved_in, Source::Corpus);
        assert_eq!(corpus_row.code_from, Some(Source::Corpus));
        assert_eq!(corpus_row.url, None);
        let mixup = l
            .resolved
            .iter()
            .find(|r| r.entry == "arxiv:1710.09412")
            .unwrap();
        assert_eq!(mixup.resolved_in, Source::Arxiv);
        assert_eq!(
            mixup.url.as_deref(),
            Some("http://arxiv.org/abs/1710.09412v1")
        );
        assert_eq!(mixup.authors, vec!["Zhang", "Cisse"]);
        assert_eq!(mixup.authors_in_common, vec!["Zhang", "Cisse"]);
        assert_eq!(mixup.year, Some(2018));
        assert_eq!(mixup.code_from, Some(Source::Github));
        assert_eq!(
            mixup.code_url.as_deref(),
            Some("https://github.com/fb/mixup-cifar10")
        );
        // From the whole tree: the README first, then code, the nested model (its path names
        // mixup) first; not the licence, the file over the size cap, tests, docs, notebooks.
        assert_eq!(mixup.code_files, MIXUP_FILES);
        let root = mixup.code_root.as_ref().unwrap();
        assert!(root.starts_with(&cache));
        assert!(
            std::fs::read_to_string(root.join("code/train.py"))
                .unwrap()
                .contains("def mixup")
        );
        assert!(
            std::fs::read_to_string(root.join("code/mixup/models/preact_resnet.py"))
                .unwrap()
                .contains("class PreActResNet")
        );
        assert!(
            std::fs::read_to_string(&mixup.paper_file)
                .unwrap()
                .contains("convex combinations")
        );

        let reasons: Vec<(&str, &str)> = l
            .unresolved
            .iter()
            .map(|u| (u.reference.raw.as_str(), u.reason.as_str()))
            .collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert_eq!(
            reasons[0].1,
            "not in the corpus; not on arXiv (no title matched among 0 results)"
        );
        assert_eq!(
            reasons[1].1,
            "not in the corpus; not looked up online: a tool, not method lineage"
        );
        assert!(
            reasons[2]
                .1
                .starts_with("not in the corpus; arXiv look-up failed: HTTP 503")
                && reasons[2].1.contains("down for maintenance"),
            "{}",
            reasons[2].1
        );

        // The token goes to the GitHub API (and files on its origin, as here) only, never to
        // arXiv.
        let seen = web.requests();
        for r in &seen {
            let expect = (!r.path.starts_with("/api/")).then_some("Bearer tok-123");
            assert_eq!(r.authorization.as_deref(), expect, "{r:?}");
            assert!(r.user_agent.as_deref().unwrap().starts_with("reprolab/"));
        }
        // 503 retried (3 attempts), the others once each: arXiv twice, the repository (its
        // default branch), its tree, three files.
        let broken = seen.iter().filter(|r| r.query.contains("broken")).count();
        assert_eq!(broken, 3);
        assert_eq!(seen.len(), 3 + 2 + 2 + 3, "{seen:?}");
        assert!(
            seen.iter()
                .any(|r| r.path == "/repos/fb/mixup-cifar10/git/trees/master"
                    && r.query == "recursive=1")
        );
        assert!(!seen.iter().any(|r| r.path.ends_with("/contents")));
        let report = l.online.as_ref().unwrap();
        assert!(report.network);
        assert_eq!(report.looked_up, 3);
        assert_eq!(report.requests, seen.len());
        assert_eq!(report.from_cache, 0);

        // A rerun asks only what failed; the rest comes from the cache.
        let mut lookup = online(&web, &cache, Some("tok-123"));
        let again = resolve_online(&paper, Some(&corpus), 5, &mut lookup).await;
        let new: Vec<_> = web.requests().split_off(seen.len());
        assert!(new.iter().all(|r| r.query.contains("broken")), "{new:?}");
        assert_eq!(again.online.as_ref().unwrap().from_cache, 2 + 2 + 3);
        assert_eq!(again.resolved.len(), 2);

        // Offline, the cache alone answers: the same lineage, no request at all.
        let before = web.requests().len();
        let mut cached = Lookup::cache_only(settings(&web, &cache));
        let offline = resolve_online(&paper, Some(&corpus), 5, &mut cached).await;
        assert_eq!(web.requests().len(), before);
        assert!(!offline.online.as_ref().unwrap().network);
        let ids: Vec<&str> = offline.resolved.iter().map(|r| r.entry.as_str()).collect();
        assert!(ids.contains(&"arxiv:1710.09412"), "{ids:?}");
        let mixup = offline
            .resolved
            .iter()
            .find(|r| r.entry == "arxiv:1710.09412")
            .unwrap();
        assert_eq!(mixup.code_files, MIXUP_FILES);
        // What was never answered keeps the offline reason; the offline resolution is a subset.
        let broken = offline
            .unresolved
            .iter()
            .find(|u| u.reference.raw.contains("Broken"));
        assert_eq!(broken.unwrap().reason, "not in the corpus");
        let adam = offline
            .unresolved
            .iter()
            .find(|u| u.reference.raw.contains("Adam"));
        assert_eq!(adam.unwrap().reason, "not in the corpus");
        let plain = resolve(&paper, &corpus, 5);
        assert_eq!(plain.resolved.len(), 1);
        assert!(plain.online.is_none());
    }

    #[test]
    fn raw_files_come_from_github_or_from_the_api_stood_in_for() {
        let mut s = Settings::new(Path::new("c"));
        assert_eq!(s.github_raw_base(), DEFAULT_GITHUB_RAW_URL);
        s.github_api_url = "http://127.0.0.1:9/".into();
        assert_eq!(s.github_raw_base(), "http://127.0.0.1:9/raw");
        s.github_raw_url = Some("https://mirror.example/raw/".into());
        assert_eq!(s.github_raw_base(), "https://mirror.example/raw");
    }

    #[tokio::test]
    async fn a_truncated_or_failed_tree_falls_back_to_the_top_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (corpus, paper) = corpus_and_paper(dir.path());
        let web = mixup_server();
        let tree = "/repos/fb/mixup-cifar10/git/trees/master";
        let truncated = serde_json::json!({"sha": "0", "truncated": true, "tree": [
            {"path": "mixup/models/preact_resnet.py", "mode": "100644", "type": "blob", "size": 10}
        ]});
        web.route_once(tree, &[], FakeAnswer::json(truncated.to_string()));
        web.route_once(tree, &[], FakeAnswer::status(404, "Not Found"));
        for run in ["truncated", "failed"] {
            let before = web.requests().len();
            let mut lookup = online(&web, &dir.path().join(run), None);
            let l = resolve_online(&paper, Some(&corpus), 5, &mut lookup).await;
            let mixup = l
                .resolved
                .iter()
                .find(|r| r.entry == "arxiv:1710.09412")
                .unwrap();
            // The top directory's README and code only, as its listing shows them.
            assert_eq!(
                mixup.code_files,
                vec!["code/README.md", "code/train.py"],
                "{run}"
            );
            let paths: Vec<String> = web.requests()[before..]
                .iter()
                .map(|r| r.path.clone())
                .collect();
            assert!(paths.iter().any(|p| p == tree), "{run}: {paths:?}");
            assert!(
                paths.contains(&"/repos/fb/mixup-cifar10/contents".to_string()),
                "{run}: {paths:?}"
            );
            assert!(
                !paths.iter().any(|p| p.contains("/mixup/models/")),
                "{paths:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_search_hit_must_name_the_paper_or_its_readme_cite_it() {
        let dir = tempfile::tempdir().unwrap();
        let (_, paper) = corpus_and_paper(dir.path());
        let cache = dir.path().join("cache");
        let web = FakeWeb::start();
        // On arXiv, no link to code: GitHub is searched.
        web.route(
            "/api/query",
            &["softened targets"],
            FakeAnswer::atom(feed(
                "2401.00001",
                "Softened Targets: Calibrating Classifiers by Smoothing One-Hot Labels",
                &["Rosa Ashdown", "Mia Okafor"],
                "We smooth one-hot labels.",
                "",
            )),
        );
        web.route(
            "/search/repositories",
            &["q=softened targets calibrating classifiers"],
            FakeAnswer::json(
                r#"{"total_count": 2, "items": [
                {"full_name": "x/awesome-calibration", "html_url": "https://github.com/x/awesome-calibration",
                 "name": "awesome-calibration", "description": "A list of papers"},
                {"full_name": "ra/softened-targets", "html_url": "https://github.com/ra/softened-targets",
                 "name": "softened-targets", "description": null}]}"#,
            ),
        );
        web.route(
            "/repos/ra/softened-targets/contents",
            &[],
            FakeAnswer::json(listing(&web, "ra/softened-targets", &[("smooth.py", 20)])),
        );
        web.route(
            "/raw/ra/softened-targets/smooth.py",
            &[],
            FakeAnswer::text("def smooth(): pass\n"),
        );
        // On arXiv; the only search hit is unrelated, and its README does not cite the paper.
        web.route(
            "/api/query",
            &["mixup"],
            FakeAnswer::atom(feed(
                "1710.09412",
                "mixup: Beyond Empirical Risk Minimization",
                &["Hongyi Zhang"],
                "Convex combinations.",
                "",
            )),
        );
        web.route(
            "/search/repositories",
            &["q=mixup"],
            FakeAnswer::json(
                r#"{"total_count": 1, "items": [{"full_name": "y/tools", "html_url": "https://github.com/y/tools", "name": "tools", "description": "misc"}]}"#,
            ),
        );
        web.route(
            "/repos/y/tools/contents",
            &[],
            FakeAnswer::json(listing(&web, "y/tools", &[("README.md", 10), ("a.py", 10)])),
        );
        web.route("/raw/y/tools/README.md", &[], FakeAnswer::text("# tools\n"));
        // On arXiv; GitHub's rate limit is spent.
        web.route(
            "/api/query",
            &["temperature scaling"],
            FakeAnswer::atom(feed(
                "2301.00002",
                "Temperature Scaling for Tired Networks Revisited",
                &["Mia Okafor"],
                "Temperature.",
                "",
            )),
        );
        web.route(
            "/search/repositories",
            &["q=temperature"],
            FakeAnswer::status(403, "API rate limit exceeded for 127.0.0.1.")
                .with_header("x-ratelimit-remaining", "0"),
        );
        let mut lookup = online(&web, &cache, None);
        let l = resolve_online(&paper, None, 5, &mut lookup).await;
        assert_eq!(l.corpus, None);
        let row = |id: &str| {
            l.resolved
                .iter()
                .find(|r| r.entry == id)
                .unwrap_or_else(|| panic!("{id} not resolved: {l:?}"))
        };
        let soft = row("arxiv:2401.00001");
        assert_eq!(soft.code_files, vec!["code/smooth.py"]);
        assert_eq!(
            soft.code_url.as_deref(),
            Some("https://github.com/ra/softened-targets")
        );
        let mixup = row("arxiv:1710.09412");
        assert_eq!(mixup.code_from, None);
        assert!(
            mixup
                .code_note
                .as_deref()
                .unwrap()
                .contains("the best search hit, y/tools, does not name the paper"),
            "{:?}",
            mixup.code_note
        );
        // Nothing of it but its README was fetched.
        assert!(!web.requests().iter().any(|r| r.path == "/raw/y/tools/a.py"));
        let temp = row("arxiv:2301.00002");
        let note = temp.code_note.as_deref().unwrap();
        assert!(
            note.contains("rate limited") && note.contains("GITHUB_TOKEN"),
            "{note}"
        );
        // A spent rate limit is not retried.
        let searches = web
            .requests()
            .iter()
            .filter(|r| r.query.contains("temperature") && r.path.starts_with("/search"))
            .count();
        assert_eq!(searches, 1);
        // Without a corpus, the reasons say only what the network said.
        assert!(l.unresolved.iter().all(|u| !u.reason.contains("corpus")));
    }

    #[tokio::test]
    async fn bad_answers_are_reported_per_reference_and_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let (corpus, paper) = corpus_and_paper(dir.path());
        let cache = dir.path().join("cache");
        let web = FakeWeb::start();
        web.route(
            "/api/query",
            &["mixup"],
            FakeAnswer::atom("<feed><entry>truncated"),
        );
        // A 429 with Retry-After: 0 is retried, then answered.
        web.route_once(
            "/api/query",
            &["temperature"],
            FakeAnswer::status(429, "slow down").with_header("retry-after", "0"),
        );
        web.route("/api/query", &["temperature"], FakeAnswer::atom(EMPTY_FEED));
        // A server that answers too late.
        web.route(
            "/api/query",
            &["broken"],
            FakeAnswer::atom(EMPTY_FEED).with_delay(Duration::from_secs(2)),
        );
        let mut net = network(&web, None);
        net.timeout = Duration::from_millis(300);
        net.retry.max_attempts = 2;
        let mut lookup = Lookup::online(settings(&web, &cache), net).unwrap();
        let started = Instant::now();
        let l = resolve_online(&paper, Some(&corpus), 5, &mut lookup).await;
        assert!(started.elapsed() < Duration::from_secs(4));
        let reason = |word: &str| {
            l.unresolved
                .iter()
                .find(|u| u.reference.raw.contains(word))
                .map(|u| u.reason.clone())
                .unwrap()
        };
        assert!(
            reason("mixup").contains("arXiv's answer is unusable: not XML"),
            "{}",
            reason("mixup")
        );
        assert!(
            reason("Temperature").ends_with("no title matched among 0 results)"),
            "{}",
            reason("Temperature")
        );
        assert!(
            reason("Broken").contains("timed out"),
            "{}",
            reason("Broken")
        );
        // The unusable answer was dropped from the cache: a cache-only rerun has nothing.
        let mut cached = Lookup::cache_only(settings(&web, &cache));
        let offline = resolve_online(&paper, Some(&corpus), 5, &mut cached).await;
        let mixup = offline
            .unresolved
            .iter()
            .find(|u| u.reference.raw.contains("mixup"));
        assert_eq!(mixup.unwrap().reason, "not in the corpus");
    }

    #[tokio::test]
    async fn an_unreachable_host_fails_fast_after_its_first_failure_and_the_cap_holds() {
        let dir = tempfile::tempdir().unwrap();
        let (corpus, paper) = corpus_and_paper(dir.path());
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let web = FakeWeb::start();
        let mut s = settings(&web, &dir.path().join("cache"));
        s.arxiv_url = format!("http://127.0.0.1:{port}/api/query");
        s.max_lookups = 2;
        let mut lookup = Lookup::online(s, network(&web, None)).unwrap();
        let l = resolve_online(&paper, Some(&corpus), 5, &mut lookup).await;
        let reasons: Vec<&str> = l.unresolved.iter().map(|u| u.reason.as_str()).collect();
        assert!(reasons[0].contains("cannot connect to"), "{reasons:?}");
        assert!(reasons[1].contains("cannot connect to"), "{reasons:?}");
        assert!(reasons[3].ends_with("the cap of 2 look-ups per paper is reached"));
        // Three attempts for the first reference, none for the second.
        assert_eq!(l.online.as_ref().unwrap().requests, 3);
        assert_eq!(l.resolved.len(), 1);
    }

    #[tokio::test]
    async fn arxiv_requests_are_spaced_by_the_polite_delay() {
        let dir = tempfile::tempdir().unwrap();
        let (corpus, paper) = corpus_and_paper(dir.path());
        let web = FakeWeb::start();
        web.route("/api/query", &[], FakeAnswer::atom(EMPTY_FEED));
        let mut net = network(&web, None);
        net.arxiv_delay = Duration::from_millis(300);
        let mut lookup = Lookup::online(settings(&web, &dir.path().join("c")), net).unwrap();
        let started = Instant::now();
        let l = resolve_online(&paper, Some(&corpus), 5, &mut lookup).await;
        // Three references looked up: two waits.
        assert_eq!(l.online.as_ref().unwrap().requests, 3);
        assert!(started.elapsed() >= Duration::from_millis(600));
    }
}
