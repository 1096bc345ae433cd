//! The HTTP plumbing both providers share: one JSON POST with a timeout, a cap on the response
//! size (read as a stream, so a runaway server cannot fill memory), and the mapping of transport
//! failures and error statuses onto [`LlmError`].

use std::time::Duration;

use reqwest::header::{CONTENT_LENGTH, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

use crate::LlmError;

/// Default cap on a response body.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// How much of an error body goes into an error message.
const EXCERPT_CHARS: usize = 300;

/// A JSON-over-HTTP client bound to one server.
#[derive(Clone)]
pub(crate) struct JsonClient {
    client: reqwest::Client,
    timeout: Duration,
    max_body: usize,
}

impl std::fmt::Debug for JsonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonClient")
            .field("timeout", &self.timeout)
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl JsonClient {
    /// A client for the server at `base_url` (checked here, so a typo fails before any call).
    /// Loopback servers are reached directly, never through an `HTTP_PROXY`.
    pub fn new(base_url: &str, timeout: Duration, max_body: usize) -> Result<JsonClient, LlmError> {
        let url = reqwest::Url::parse(base_url).map_err(|e| {
            LlmError::Config(format!(
                "base URL {base_url:?} is not a URL ({e}); expected e.g. http://localhost:8000/v1"
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::Config(format!(
                "base URL {base_url:?} has scheme {:?}; expected http or https",
                url.scheme()
            )));
        }
        let loopback = matches!(
            url.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        );
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("reprolab/", env!("CARGO_PKG_VERSION")));
        if loopback {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| LlmError::Config(format!("cannot create the HTTP client: {e}")))?;
        Ok(JsonClient {
            client,
            timeout,
            max_body,
        })
    }

    /// POSTs `body` as JSON to `url` with `headers` and returns the parsed JSON answer.
    /// Header values listed in `secret_headers` are marked sensitive (never printed by reqwest).
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        secret_headers: &[&'static str],
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, LlmError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let mut v = HeaderValue::from_str(value).map_err(|_| {
                LlmError::Config(format!(
                    "header {name} has characters HTTP does not allow (is the API key pasted \
                     with a newline?)"
                ))
            })?;
            v.set_sensitive(secret_headers.contains(name));
            map.insert(HeaderName::from_static(name), v);
        }
        let bytes = serde_json::to_vec(body)
            .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))?;
        let resp = self
            .client
            .post(url)
            .headers(map)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes)
            .send()
            .await
            .map_err(|e| self.transport_error(url, e))?;
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        if !(200..300).contains(&status) {
            let body = self
                .read_capped(url, resp, 64 * 1024)
                .await
                .unwrap_or_default();
            let body_excerpt = excerpt(&String::from_utf8_lossy(&body));
            return Err(if status == 429 {
                LlmError::RateLimited {
                    url: url.to_string(),
                    body_excerpt,
                    retry_after,
                }
            } else {
                LlmError::Http {
                    url: url.to_string(),
                    status,
                    body_excerpt,
                    retry_after,
                }
            });
        }
        if let Some(len) = resp
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            && len > self.max_body as u64
        {
            return Err(self.too_large(url));
        }
        let body = self.read_capped(url, resp, self.max_body).await?;
        serde_json::from_slice(&body).map_err(|e| {
            LlmError::BadResponse(format!(
                "{url} answered with a body that is not JSON ({e}): {}",
                excerpt(&String::from_utf8_lossy(&body))
            ))
        })
    }

    /// Reads the body chunk by chunk, failing as soon as it passes `cap` bytes.
    async fn read_capped(
        &self,
        url: &str,
        mut resp: reqwest::Response,
        cap: usize,
    ) -> Result<Vec<u8>, LlmError> {
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| self.transport_error(url, e))?
        {
            if body.len() + chunk.len() > cap {
                return Err(self.too_large(url));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn too_large(&self, url: &str) -> LlmError {
        LlmError::BadResponse(format!(
            "response from {url} is larger than {} bytes ({:.1} MiB); lower max_tokens or check \
             the server",
            self.max_body,
            self.max_body as f64 / (1024.0 * 1024.0)
        ))
    }

    fn transport_error(&self, url: &str, e: reqwest::Error) -> LlmError {
        let url = url.to_string();
        if e.is_timeout() {
            return LlmError::Timeout {
                url,
                after: self.timeout,
            };
        }
        let detail = error_chain(&e);
        if e.is_connect() {
            LlmError::Connect { url, detail }
        } else {
            LlmError::Transport { url, detail }
        }
    }
}

/// An error with its sources, `a: b: c`, each source left out when an earlier message already
/// holds it (reqwest repeats the URL and the cause in its own message).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = s.source();
    }
    parts.join(": ")
}

/// An answer's `Retry-After` header as a delay (see [`parse_retry_after`]).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after)
}

/// `Retry-After` as delay-seconds (integer or decimal). HTTP dates are ignored (the caller then
/// uses its own backoff).
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// The first [`EXCERPT_CHARS`] characters of `s`, on one line.
pub(crate) fn excerpt(s: &str) -> String {
    one_line_excerpt(s, EXCERPT_CHARS)
}

/// The first `max_chars` characters of `s` on one line (control characters as spaces, trimmed),
/// with `…` where it was cut: how an answer's body is quoted in an error message.
pub fn one_line_excerpt(s: &str, max_chars: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= max_chars {
        return flat.to_string();
    }
    let cut: String = flat.chars().take(max_chars).collect();
    format!("{cut}…")
}

/// `base` joined with `path`, with exactly one slash between them.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("99999"), Some(Duration::from_secs(3600)));
    }

    #[test]
    fn excerpt_is_short_and_flat() {
        assert_eq!(excerpt("a\nb"), "a b");
        let long = "x".repeat(1000);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(
            join_url("http://h/v1/", "/chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(join_url("http://h", "v1/messages"), "http://h/v1/messages");
    }

    #[test]
    fn bad_base_urls_are_config_errors() {
        let e = JsonClient::new("localhost:8000", Duration::from_secs(1), 10).unwrap_err();
        assert!(matches!(e, LlmError::Config(_)), "{e}");
        let e = JsonClient::new("not a url", Duration::from_secs(1), 10).unwrap_err();
        assert!(e.to_string().contains("not a URL"), "{e}");
    }
}
