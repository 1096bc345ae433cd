//! Scripted fake LLM servers for tests (cargo feature `fake`): a real HTTP server on
//! `127.0.0.1:0` speaking the OpenAI chat-completions or the Anthropic Messages format, which
//! answers from a queue of [`FakeReply`]s (then from a fallback reply) and remembers every
//! request it received. Tests use it to exercise the providers over real sockets: malformed
//! bodies, 429 bursts, slow answers, truncation, huge bodies.
//!
//! ```no_run
//! # async fn demo() {
//! use reprolab_llm::fake::{FakeReply, FakeServer};
//! let server = FakeServer::openai([FakeReply::Status(429, Some(0)), FakeReply::Text("hi".into())]);
//! let base = server.base_url(); // http://127.0.0.1:PORT/v1
//! # }
//! ```
//!
//! [`FakeServer::openai`] / [`FakeServer::anthropic`] run on the current tokio runtime;
//! [`FakeServer::start_background`] owns a runtime on its own thread, for tests that are not
//! async (e.g. ones that run the `reprolab` binary as a subprocess against it).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Response, StatusCode, Uri};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeReply {
    /// A normal completion with this text (OpenAI: repeated for each of the `n` choices asked).
    Text(String),
    /// Exactly these choices whatever `n` was asked (like servers that ignore `n`); the
    /// Anthropic flavour uses the first.
    Choices(Vec<String>),
    /// An HTTP error with this status and optional `Retry-After` seconds.
    Status(u16, Option<u64>),
    /// Waits, then answers with the inner reply.
    Delay(Duration, Box<FakeReply>),
    /// A completion cut at max_tokens (`finish_reason: length` / `stop_reason: max_tokens`).
    Truncated(String),
    /// A valid completion whose text is this many bytes long.
    Huge(usize),
    /// This raw body with status 200 and a JSON content type.
    Malformed(String),
    /// A completion that repeats the last user message.
    Echo,
}

/// Which wire format the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `POST /v1/chat/completions`; the base URL ends in `/v1`.
    OpenAi,
    /// `POST /v1/messages`; the base URL is the server root.
    Anthropic,
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    pub path: String,
    /// Header names in lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it was not JSON).
    pub body: Value,
}

impl ReceivedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct ServerState {
    flavor: Flavor,
    script: Mutex<VecDeque<FakeReply>>,
    fallback: Mutex<FakeReply>,
    required_key: Mutex<Option<String>>,
    requests: Mutex<Vec<ReceivedRequest>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// A running fake server; stops when dropped.
pub struct FakeServer {
    flavor: Flavor,
    state: Arc<ServerState>,
    loopback: Loopback,
}

/// An axum app served on `127.0.0.1:0`, on the current tokio runtime or by a runtime of its own
/// on a background thread; it stops (and its thread is joined) when dropped. The fake servers
/// of this crate and of `reprolab-paper` (its fake arXiv + GitHub) run on it.
pub struct Loopback {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Loopback {
    /// Serves `app` from a runtime of its own on a background thread named `NAME-PORT`,
    /// usable from synchronous tests.
    pub fn background(name: &str, app: Router) -> Loopback {
        let (listener, addr) = bind();
        let (tx, rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-{}", addr.port()))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the fake server");
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                    serve(listener, app, rx).await;
                });
            })
            .expect("spawn the fake server thread");
        Loopback {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl FakeServer {
    /// An OpenAI-compatible server on the current tokio runtime (panics outside one).
    pub fn openai(script: impl IntoIterator<Item = FakeReply>) -> FakeServer {
        FakeServer::start(Flavor::OpenAi, script)
    }

    /// An Anthropic Messages server on the current tokio runtime (panics outside one).
    pub fn anthropic(script: impl IntoIterator<Item = FakeReply>) -> FakeServer {
        FakeServer::start(Flavor::Anthropic, script)
    }

    /// A server on the current tokio runtime (panics outside one).
    pub fn start(flavor: Flavor, script: impl IntoIterator<Item = FakeReply>) -> FakeServer {
        let (listener, addr) = bind();
        let listener = tokio::net::TcpListener::from_std(listener)
            .expect("FakeServer::start must be called inside a tokio runtime");
        let state = new_state(flavor, script);
        let (tx, rx) = oneshot::channel();
        tokio::spawn(serve(listener, app(state.clone()), rx));
        FakeServer {
            flavor,
            state,
            loopback: Loopback {
                addr,
                shutdown: Some(tx),
                thread: None,
            },
        }
    }

    /// A server with its own runtime on a background thread, usable from synchronous tests.
    pub fn start_background(
        flavor: Flavor,
        script: impl IntoIterator<Item = FakeReply>,
    ) -> FakeServer {
        let state = new_state(flavor, script);
        let loopback = Loopback::background("fake-llm", app(state.clone()));
        FakeServer {
            flavor,
            state,
            loopback,
        }
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI) or `http://127.0.0.1:PORT` (Anthropic).
    pub fn base_url(&self) -> String {
        match self.flavor {
            Flavor::OpenAi => format!("http://{}/v1", self.loopback.addr),
            Flavor::Anthropic => format!("http://{}", self.loopback.addr),
        }
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: FakeReply) {
        self.state.script.lock().unwrap().push_back(reply);
    }

    /// The reply used once the script is empty (initially [`FakeReply::Echo`]).
    pub fn set_fallback(&self, reply: FakeReply) {
        *self.state.fallback.lock().unwrap() = reply;
    }

    /// Answers 401 (echoing the key it got, as some real servers do) unless the request carries
    /// this key (`Authorization: Bearer KEY` or `x-api-key: KEY`).
    pub fn require_key(&self, key: &str) {
        *self.state.required_key.lock().unwrap() = Some(key.to_string());
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<ReceivedRequest> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn request_count(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// The most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

fn bind() -> (std::net::TcpListener, SocketAddr) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.set_nonblocking(true).expect("non-blocking");
    let addr = listener.local_addr().expect("local address");
    (listener, addr)
}

fn new_state(flavor: Flavor, script: impl IntoIterator<Item = FakeReply>) -> Arc<ServerState> {
    Arc::new(ServerState {
        flavor,
        script: Mutex::new(script.into_iter().collect()),
        fallback: Mutex::new(FakeReply::Echo),
        required_key: Mutex::new(None),
        requests: Mutex::new(Vec::new()),
        in_flight: AtomicUsize::new(0),
        max_in_flight: AtomicUsize::new(0),
    })
}

fn app(state: Arc<ServerState>) -> Router {
    Router::new().fallback(handle).with_state(state)
}

async fn serve(listener: tokio::net::TcpListener, app: Router, shutdown: oneshot::Receiver<()>) {
    let _ = axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = shutdown.await;
        })
        .await;
}

/// Decrements the in-flight count even when the client hangs up mid-answer (the handler's
/// future is then dropped).
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let _guard = InFlight(&state.in_flight);

    let request = ReceivedRequest {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    state.requests.lock().unwrap().push(request.clone());

    let expected = match state.flavor {
        Flavor::OpenAi => "/v1/chat/completions",
        Flavor::Anthropic => "/v1/messages",
    };
    if request.path != expected {
        return json_response(
            404,
            None,
            json!({"error": {"message": format!("no route {}; expected {expected}", request.path)}}),
        );
    }
    let required = state.required_key.lock().unwrap().clone();
    if let Some(key) = required {
        let got = match state.flavor {
            Flavor::OpenAi => request
                .header("authorization")
                .map(|v| v.trim_start_matches("Bearer ").to_string()),
            Flavor::Anthropic => request.header("x-api-key").map(str::to_string),
        };
        if got.as_deref() != Some(key.as_str()) {
            return json_response(
                401,
                None,
                json!({"error": {"message": format!("Incorrect API key provided: {}", got.unwrap_or_default())}}),
            );
        }
    }
    let mut reply = {
        let next = state.script.lock().unwrap().pop_front();
        next.unwrap_or_else(|| state.fallback.lock().unwrap().clone())
    };
    while let FakeReply::Delay(d, inner) = reply {
        tokio::time::sleep(d).await;
        reply = *inner;
    }
    answer(state.flavor, &request.body, reply)
}

fn answer(flavor: Flavor, req: &Value, reply: FakeReply) -> Response<Body> {
    let n = req.get("n").and_then(Value::as_u64).unwrap_or(1).max(1) as usize;
    let (texts, finish_length) = match reply {
        FakeReply::Text(t) => (vec![t; n], false),
        FakeReply::Choices(c) => (c, false),
        FakeReply::Truncated(t) => (vec![t; n], true),
        FakeReply::Huge(bytes) => (vec!["x".repeat(bytes)], false),
        FakeReply::Echo => (vec![last_user(req); n], false),
        FakeReply::Malformed(raw) => {
            return Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from(raw))
                .unwrap();
        }
        FakeReply::Status(code, retry_after) => {
            let body = match flavor {
                Flavor::OpenAi => json!({"error": {"message": format!("fake status {code}")}}),
                Flavor::Anthropic => {
                    json!({"type": "error", "error": {"type": "fake", "message": format!("fake status {code}")}})
                }
            };
            return json_response(code, retry_after, body);
        }
        FakeReply::Delay(..) => unreachable!("delays are unwrapped by the handler"),
    };
    let prompt_tokens = prompt_words(req);
    let model = req.get("model").and_then(Value::as_str).unwrap_or("fake");
    let body = match flavor {
        Flavor::OpenAi => {
            let completion: usize = texts.iter().map(|t| words(t)).sum();
            let choices: Vec<Value> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    json!({
                        "index": i,
                        "message": {"role": "assistant", "content": t},
                        "finish_reason": if finish_length { "length" } else { "stop" },
                    })
                })
                .collect();
            json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                "choices": choices,
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                          "total_tokens": prompt_tokens + completion},
            })
        }
        Flavor::Anthropic => {
            let text = texts.into_iter().next().unwrap_or_default();
            json!({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": if finish_length { "max_tokens" } else { "end_turn" },
                "usage": {"input_tokens": prompt_tokens, "output_tokens": words(&text)},
            })
        }
    };
    json_response(200, None, body)
}

fn json_response(status: u16, retry_after: Option<u64>, body: Value) -> Response<Body> {
    let mut b = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json");
    if let Some(s) = retry_after {
        b = b.header("retry-after", s.to_string());
    }
    b.body(Body::from(body.to_string())).unwrap()
}

/// The last user message of an OpenAI or Anthropic request.
fn last_user(req: &Value) -> String {
    req.get("messages")
        .and_then(Value::as_array)
        .and_then(|ms| {
            ms.iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .and_then(|m| m.get("content").and_then(Value::as_str))
        .unwrap_or("")
        .to_string()
}

/// Token counts are words, so tests can predict them.
fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

fn prompt_words(req: &Value) -> usize {
    let messages: usize = req
        .get("messages")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m.get("content").and_then(Value::as_str))
                .map(words)
                .sum()
        })
        .unwrap_or(0);
    let system = req.get("system").and_then(Value::as_str).map_or(0, words);
    messages + system
}
