//! `reprolab paper lineage`: a paper's references resolved in a local corpus, ranked by
//! relevance to its method; with `--online`, the ones the corpus lacks looked up on arXiv and
//! GitHub (through a cache that later runs read, online or not).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use reprolab_llm::{RetryPolicy, Secret};
use reprolab_paper::lineage::{Resolved, Source, resolve, resolve_online};
use reprolab_paper::online::fetch::NetworkSettings;
use reprolab_paper::online::{
    DEFAULT_ARXIV_URL, DEFAULT_CACHE_DIR, DEFAULT_GITHUB_API_URL, Lookup, Settings,
};
use reprolab_paper::{Corpus, Lineage, Paper};

use super::clip;
use crate::cli::{Global, PaperLineageArgs};

/// The network look-ups of lineage (`paper lineage`, `paper implement`).
#[derive(Debug, Clone, Args)]
pub struct OnlineArgs {
    /// Look the references the corpus lacks up on arXiv (title, authors, abstract) and their
    /// code on GitHub (the README and the code files most relevant to the paper, from the
    /// repository's whole file tree). Without it nothing is asked over the network: only the
    /// corpus, and the cache of earlier --online runs, are read.
    #[arg(long)]
    pub online: bool,
    /// arXiv's export API (Atom).
    #[arg(long, env = "REPROLAB_ARXIV_URL", value_name = "URL", default_value = DEFAULT_ARXIV_URL)]
    pub arxiv_url: String,
    /// GitHub's REST API (a GITHUB_TOKEN in the environment is sent to it as a bearer token).
    #[arg(long, env = "REPROLAB_GITHUB_API_URL", value_name = "URL", default_value = DEFAULT_GITHUB_API_URL)]
    pub github_api_url: String,
    /// Where a repository's files are downloaded (OWNER/REPO/BRANCH/PATH under it) [default:
    /// https://raw.githubusercontent.com for GitHub's API, else API/raw]
    #[arg(long, env = "REPROLAB_GITHUB_RAW_URL", value_name = "URL")]
    pub github_raw_url: Option<String>,
    /// Where every answer fetched is kept, and the papers found as corpus entries; later runs
    /// read it instead of asking again.
    #[arg(long, env = "REPROLAB_LINEAGE_CACHE", value_name = "DIR", default_value = DEFAULT_CACHE_DIR)]
    pub lineage_cache: PathBuf,
    /// Seconds between two arXiv requests (arXiv asks for 3).
    #[arg(
        long,
        env = "REPROLAB_ARXIV_DELAY",
        value_name = "SECONDS",
        default_value_t = 3.0
    )]
    pub arxiv_delay: f64,
    /// Most references looked up online per paper.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub online_max: usize,
    /// Seconds before one request is abandoned (retried on timeouts, 429 and 5xx: 3 attempts
    /// in all).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub online_timeout: f64,
}

impl OnlineArgs {
    /// The look-ups to make: over the network with --online; else from the cache alone when it
    /// exists; else none.
    pub fn lookup(&self) -> Result<Option<Lookup>> {
        let mut settings = Settings::new(&self.lineage_cache);
        settings.arxiv_url = self.arxiv_url.clone();
        settings.github_api_url = self.github_api_url.trim_end_matches('/').to_string();
        settings.github_raw_url = self.github_raw_url.clone();
        settings.max_lookups = self.online_max;
        if !self.online {
            return Ok(self
                .lineage_cache
                .is_dir()
                .then(|| Lookup::cache_only(settings)));
        }
        let seconds = |v: f64, flag: &str| {
            if v.is_finite() && v >= 0.0 {
                Ok(Duration::from_secs_f64(v.min(3600.0)))
            } else {
                Err(anyhow!("{flag} is {v}; expected seconds, 0 or more"))
            }
        };
        let timeout = seconds(self.online_timeout, "--online-timeout")?;
        if timeout.is_zero() {
            bail!("--online-timeout must be more than 0 seconds");
        }
        let loopback = |url: &str| {
            host_of(url).is_some_and(|h| matches!(h.as_str(), "127.0.0.1" | "localhost" | "[::1]"))
        };
        let network = NetworkSettings {
            timeout,
            retry: RetryPolicy {
                max_attempts: 3,
                base_delay: Duration::from_secs(1),
                max_delay: Duration::from_secs(10),
            },
            arxiv_delay: seconds(self.arxiv_delay, "--arxiv-delay")?,
            github_token: std::env::var("GITHUB_TOKEN")
                .ok()
                .filter(|t| !t.trim().is_empty())
                .map(|t| Secret::new(t.trim())),
            github_api_url: settings.github_api_url.clone(),
            no_proxy: loopback(&self.arxiv_url)
                && loopback(&self.github_api_url)
                && loopback(&settings.github_raw_base()),
        };
        Lookup::online(settings, network)
            .map(Some)
            .map_err(|e| anyhow!(e))
    }
}

/// The host of a URL, if it is one.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next()?
    } else {
        host.split(':').next()?
    };
    Some(host.to_ascii_lowercase())
}

pub async fn lineage(g: &Global, a: &PaperLineageArgs) -> Result<ExitCode> {
    if a.top == 0 {
        bail!("--top must be at least 1");
    }
    let paper = Paper::load(&a.paper)?;
    let corpus = a.corpus.as_deref().map(Corpus::load).transpose()?;
    let lineage = match (a.online.lookup()?, &corpus) {
        (Some(mut lookup), _) => resolve_online(&paper, corpus.as_ref(), a.top, &mut lookup).await,
        (None, Some(corpus)) => resolve(&paper, corpus, a.top),
        (None, None) => bail!("a corpus (--corpus DIR) is needed without --online"),
    };
    if g.json {
        println!("{}", serde_json::to_string(&lineage)?);
    } else {
        print_lineage(&lineage);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_lineage(l: &Lineage) {
    let searched = match (&l.corpus, &l.online) {
        (Some(c), None) => format!("in {}", c.display()),
        (Some(c), Some(_)) => format!("in {} and online", c.display()),
        (None, _) => "online".into(),
    };
    let how = match &l.online {
        None => "offline: only the corpus was searched".to_string(),
        Some(o) if o.network => format!(
            "online: {} references looked up on arXiv and GitHub, {} requests, {} answers from \
             the cache {}",
            o.looked_up,
            o.requests,
            o.from_cache,
            o.cache.display()
        ),
        Some(o) => format!(
            "offline: the corpus and the cache of earlier --online runs ({}) were searched",
            o.cache.display()
        ),
    };
    println!(
        "lineage of \"{}\" {searched} (ranked against {}; {how})",
        l.title, l.query
    );
    if let Some(id) = &l.excluded_self {
        println!("left out: {id} (the paper itself)");
    }
    if l.resolved.is_empty() {
        println!(
            "no reference is in the corpus{}",
            if l.online.is_some() {
                " or found online"
            } else {
                ""
            }
        );
    } else {
        println!();
        print_resolved(&l.resolved);
    }
    if !l.below_top.is_empty() {
        println!(
            "\n{} more resolved, below the top {}:",
            l.below_top.len(),
            l.top
        );
        print_resolved(&l.below_top);
    }
    if !l.unresolved.is_empty() {
        println!("\nunresolved references ({}):", l.unresolved.len());
        for u in &l.unresolved {
            let generic = u
                .generic
                .map(|k| format!("; generic: {k}"))
                .unwrap_or_default();
            println!("  {} ({}{generic})", u.reference.raw, u.reason);
        }
    }
    for s in &l.skipped {
        eprintln!(
            "warning: {}: not read as a paper: {}",
            s.path.display(),
            s.reason
        );
    }
}

const TITLE_WIDTH: usize = 48;
const AUTHORS_WIDTH: usize = 24;

fn print_resolved(rows: &[Resolved]) {
    println!(
        "{:>4}  {:>7}  {:<TITLE_WIDTH$}  {:<AUTHORS_WIDTH$}  {:>4}  matched by",
        "rank", "score", "title", "authors, year", "code"
    );
    for r in rows {
        let authors = match r.year {
            Some(y) => format!("{} {y}", r.authors.join(", ")),
            None => r.authors.join(", "),
        };
        println!(
            "{:>4}  {:>7.3}  {:<TITLE_WIDTH$}  {:<AUTHORS_WIDTH$}  {:>4}  {}",
            r.rank,
            r.score,
            clip(&r.title, TITLE_WIDTH),
            clip(&authors, AUTHORS_WIDTH),
            r.code_files.len(),
            r.matched_by.label()
        );
        if r.resolved_in != Source::Corpus {
            let code = match (&r.code_url, &r.code_note) {
                (Some(url), None) => format!("code: {url}"),
                (Some(url), Some(note)) => format!("code: {url} ({note})"),
                (None, Some(note)) => format!("no code: {note}"),
                (None, None) => "no code".into(),
            };
            println!(
                "{:>19}{}: {}; {code}",
                "",
                r.resolved_in.label(),
                r.url.as_deref().unwrap_or("")
            );
        }
    }
}
