//! The HTTP GETs of the online look-ups, through an on-disk cache: every answer that arrived
//! whole with a 2xx status is kept under `CACHE/http/` (named by the SHA-256 of its URL, the URL
//! beside it in `.url`), and a URL found there is never asked for again. Without the network
//! (no `--online`) only the cache answers.
//!
//! Requests have a timeout, a cap on the answer's size (read as a stream), and retries with
//! backoff (reprolab-llm's [`RetryPolicy`]) on 429, 408, 5xx, timeouts and connection failures;
//! a `Retry-After` longer than the policy's longest backoff is not waited for. arXiv requests
//! are spaced by a polite delay. A host that could not be reached (after the retries) is not
//! tried again in the same run: its later requests fail at once with the same error.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reprolab_llm::{RetryPolicy, Secret, error_chain, retry_after};
use reqwest::header::HeaderMap;
use sha2::{Digest, Sha256};

use crate::write_atomically;

/// How much of an error answer goes into a message.
const EXCERPT_CHARS: usize = 200;

/// Who is asked: decides the polite delay (arXiv) and the token (the GitHub API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    Arxiv,
    GitHubApi,
    /// A file's raw download (no token, unless it is on the GitHub API's own origin).
    Raw,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    /// Cache-only (no `--online`) and the URL is not in the cache.
    #[error("{url} is not in the cache (and --online is off)")]
    NotCached { url: String },
    #[error("HTTP {status} from {url}: {excerpt}")]
    Http {
        url: String,
        status: u16,
        excerpt: String,
    },
    #[error("rate limited by {url}: HTTP {status}: {detail}")]
    RateLimited {
        url: String,
        status: u16,
        detail: String,
    },
    #[error("{url} timed out after {secs:.0} s")]
    Timeout { url: String, secs: f64 },
    #[error("cannot connect to {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("the connection to {url} broke: {detail}")]
    Transport { url: String, detail: String },
    #[error("the answer from {url} is larger than {cap} bytes")]
    TooLarge { url: String, cap: usize },
    #[error("{url}: not a URL ({detail})")]
    BadUrl { url: String, detail: String },
}

impl FetchError {
    /// Failures that may pass on their own, as reprolab-llm retries them (not GitHub's spent
    /// rate limit, a 403 that lasts until the hour's reset).
    fn is_retryable(&self) -> bool {
        match self {
            FetchError::Http { status, .. } => *status == 408 || (500..=599).contains(status),
            FetchError::RateLimited { status, .. } => *status == 429,
            FetchError::Timeout { .. }
            | FetchError::Connect { .. }
            | FetchError::Transport { .. } => true,
            _ => false,
        }
    }

    /// The host is unreachable: later requests to it would fail the same way.
    fn host_is_down(&self) -> bool {
        matches!(
            self,
            FetchError::Timeout { .. } | FetchError::Connect { .. }
        )
    }
}

/// How the network is used (when it is).
#[derive(Debug, Clone)]
pub struct NetworkSettings {
    /// One request's time limit (connecting included).
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// The least time between two arXiv requests (arXiv asks for 3 s).
    pub arxiv_delay: Duration,
    /// Sent as a bearer token to the GitHub API.
    pub github_token: Option<Secret>,
    /// The GitHub API's base URL (the token goes to this origin only).
    pub github_api_url: String,
    /// No proxy (for servers on loopback).
    pub no_proxy: bool,
}

struct Network {
    client: reqwest::Client,
    settings: NetworkSettings,
    last_arxiv: Option<Instant>,
    /// Hosts that could not be reached, with the error that said so.
    down: HashMap<String, FetchError>,
    jitter_state: RandomState,
    jitter_counter: u64,
}

/// Counts of what the fetcher did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Requests sent over the network (retries included).
    pub requests: usize,
    /// Answers read from the cache.
    pub from_cache: usize,
}

/// GETs through the cache; over the network only when built with [`Fetcher::online`].
pub struct Fetcher {
    cache: PathBuf,
    network: Option<Network>,
    pub stats: FetchStats,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("cache", &self.cache)
            .field("online", &self.network.is_some())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// Answers from the cache in `cache` only; never touches the network.
    pub fn cache_only(cache: &Path) -> Fetcher {
        Fetcher {
            cache: cache.to_path_buf(),
            network: None,
            stats: FetchStats::default(),
        }
    }

    /// The cache first, then the network.
    pub fn online(cache: &Path, settings: NetworkSettings) -> Result<Fetcher, String> {
        let mut builder = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("reprolab/", env!("CARGO_PKG_VERSION")));
        if settings.no_proxy {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot create the HTTP client: {e}"))?;
        Ok(Fetcher {
            cache: cache.to_path_buf(),
            network: Some(Network {
                client,
                settings,
                last_arxiv: None,
                down: HashMap::new(),
                jitter_state: RandomState::new(),
                jitter_counter: 0,
            }),
            stats: FetchStats::default(),
        })
    }

    pub fn is_online(&self) -> bool {
        self.network.is_some()
    }

    /// Where the answer to `url` is kept.
    pub fn cache_path(&self, url: &str) -> PathBuf {
        let key = hex::encode(Sha256::digest(url.as_bytes()));
        self.cache.join("http").join(key)
    }

    /// Drops the cached answer to `url` (one that turned out unusable), so a rerun asks again.
    pub fn forget(&self, url: &str) {
        let path = self.cache_path(url);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(path.with_extension("url"));
    }

    /// The body of `url` (at most `cap` bytes): from the cache, else (online) from the server,
    /// then kept in the cache.
    pub async fn get(
        &mut self,
        url: &str,
        service: Service,
        cap: usize,
    ) -> Result<Vec<u8>, FetchError> {
        let path = self.cache_path(url);
        if let Ok(body) = std::fs::read(&path) {
            self.stats.from_cache += 1;
            return Ok(body);
        }
        let Some(net) = self.network.as_mut() else {
            return Err(FetchError::NotCached {
                url: url.to_string(),
            });
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| FetchError::BadUrl {
            url: url.to_string(),
            detail: e.to_string(),
        })?;
        let origin = parsed.origin().ascii_serialization();
        if let Some(e) = net.down.get(&origin) {
            return Err(e.clone());
        }
        let mut attempt = 1;
        let result = loop {
            if service == Service::Arxiv
                && let Some(last) = net.last_arxiv
            {
                let since = last.elapsed();
                if since < net.settings.arxiv_delay {
                    tokio::time::sleep(net.settings.arxiv_delay - since).await;
                }
            }
            self.stats.requests += 1;
            let (result, retry_after) = net.send(url, service, cap).await;
            if service == Service::Arxiv {
                net.last_arxiv = Some(Instant::now());
            }
            match result {
                Err(e) if e.is_retryable() && attempt < net.settings.retry.max_attempts => {
                    if retry_after.is_some_and(|r| r > net.settings.retry.max_delay) {
                        break Err(e);
                    }
                    let jitter = net.jitter();
                    let wait = net.settings.retry.backoff(attempt, retry_after, jitter);
                    tracing::info!(url, attempt, "look-up failed, retrying: {e}");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                other => break other,
            }
        };
        match result {
            Ok(body) => {
                if let Err(e) = write_atomically(&path, &body)
                    .and_then(|()| write_atomically(&path.with_extension("url"), url.as_bytes()))
                {
                    tracing::warn!("cannot keep {url} in the cache {}: {e}", path.display());
                }
                Ok(body)
            }
            Err(e) => {
                if e.host_is_down() {
                    net.down.insert(origin, e.clone());
                }
                Err(e)
            }
        }
    }
}

impl Network {
    fn jitter(&mut self) -> f64 {
        self.jitter_counter += 1;
        (self.jitter_state.hash_one(self.jitter_counter) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One request; the server's `Retry-After`, if it sent one.
    async fn send(
        &self,
        url: &str,
        service: Service,
        cap: usize,
    ) -> (Result<Vec<u8>, FetchError>, Option<Duration>) {
        let mut request = self.client.get(url);
        let github = service == Service::GitHubApi
            || (service == Service::Raw && url.starts_with(&self.settings.github_api_url));
        if service == Service::GitHubApi {
            request = request
                .header("accept", "application/vnd.github+json")
                .header("x-github-api-version", "2022-11-28");
        }
        if github && let Some(token) = &self.settings.github_token {
            match reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.expose())) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    request = request.header(reqwest::header::AUTHORIZATION, v);
                }
                Err(_) => tracing::warn!(
                    "GITHUB_TOKEN has characters HTTP does not allow; asking without it"
                ),
            }
        }
        let resp = match request.send().await {
            Ok(r) => r,
            Err(e) => return (Err(self.transport_error(url, &e)), None),
        };
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        if !(200..300).contains(&status) {
            let headers = resp.headers().clone();
            let body = read_capped(resp, 64 * 1024, url, self)
                .await
                .unwrap_or_default();
            let excerpt = excerpt(&String::from_utf8_lossy(&body));
            return (
                Err(status_error(url, status, &headers, excerpt, github)),
                retry_after,
            );
        }
        if resp.content_length().is_some_and(|n| n > cap as u64) {
            return (
                Err(FetchError::TooLarge {
                    url: url.to_string(),
                    cap,
                }),
                None,
            );
        }
        (read_capped(resp, cap, url, self).await, None)
    }

    fn transport_error(&self, url: &str, e: &reqwest::Error) -> FetchError {
        let url = url.to_string();
        if e.is_timeout() {
            return FetchError::Timeout {
                url,
                secs: self.settings.timeout.as_secs_f64(),
            };
        }
        let detail = error_chain(e);
        if e.is_connect() {
            FetchError::Connect { url, detail }
        } else {
            FetchError::Transport { url, detail }
        }
    }
}

/// An error status as a [`FetchError`]: 429, and GitHub's 403 with its limit spent, are rate
/// limits (the latter not retried: it lasts until the hour's reset).
fn status_error(
    url: &str,
    status: u16,
    headers: &HeaderMap,
    excerpt: String,
    github: bool,
) -> FetchError {
    let spent = headers
        .get("x-ratelimit-remaining")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "0");
    let hint = if github {
        "; set GITHUB_TOKEN for a higher limit, or wait"
    } else {
        "; wait before asking again"
    };
    if status == 429 || (status == 403 && (spent || excerpt.contains("rate limit"))) {
        return FetchError::RateLimited {
            url: url.to_string(),
            status,
            detail: format!("{excerpt}{hint}"),
        };
    }
    FetchError::Http {
        url: url.to_string(),
        status,
        excerpt,
    }
}

async fn read_capped(
    mut resp: reqwest::Response,
    cap: usize,
    url: &str,
    net: &Network,
) -> Result<Vec<u8>, FetchError> {
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > cap {
                    return Err(FetchError::TooLarge {
                        url: url.to_string(),
                        cap,
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(net.transport_error(url, &e)),
        }
    }
}

/// The first [`EXCERPT_CHARS`] characters of `s`, on one line.
pub(crate) fn excerpt(s: &str) -> String {
    reprolab_llm::one_line_excerpt(s, EXCERPT_CHARS)
}
