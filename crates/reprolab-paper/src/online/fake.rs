//! A fake arXiv + GitHub server for tests (cargo feature `fake`): a real HTTP server on
//! `127.0.0.1:0` (reprolab-llm's fake [`Loopback`], which its fake LLM servers run on too)
//! answering from routes — a path, words its decoded query must contain, and a canned answer —
//! and remembering every request. A request no route answers gets 404 with GitHub's
//! `{"message": "Not Found"}`. [`FakeWeb::repository`] adds the routes of a whole GitHub
//! repository.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Response, Uri};
use reprolab_llm::fake::Loopback;

/// A canned answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Waits this long before answering.
    pub delay: Option<Duration>,
}

impl FakeAnswer {
    pub fn new(status: u16, content_type: &str, body: impl Into<String>) -> FakeAnswer {
        FakeAnswer {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
            delay: None,
        }
    }

    /// 200 with an Atom body.
    pub fn atom(body: impl Into<String>) -> FakeAnswer {
        FakeAnswer::new(200, "application/atom+xml; charset=utf-8", body)
    }

    /// 200 with a JSON body.
    pub fn json(body: impl Into<String>) -> FakeAnswer {
        FakeAnswer::new(200, "application/json; charset=utf-8", body)
    }

    /// 200 with a text body (a raw file).
    pub fn text(body: impl Into<String>) -> FakeAnswer {
        FakeAnswer::new(200, "text/plain; charset=utf-8", body)
    }

    /// An error status with a JSON message.
    pub fn status(status: u16, message: &str) -> FakeAnswer {
        FakeAnswer::new(
            status,
            "application/json",
            serde_json::json!({ "message": message }).to_string(),
        )
    }

    pub fn with_header(mut self, name: &str, value: &str) -> FakeAnswer {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn with_delay(mut self, delay: Duration) -> FakeAnswer {
        self.delay = Some(delay);
        self
    }
}

#[derive(Debug, Clone)]
struct Route {
    path: String,
    query_has: Vec<String>,
    answer: FakeAnswer,
    /// Answers once, then is gone.
    once: bool,
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub path: String,
    /// The query, percent-decoded (`+` as a space).
    pub query: String,
    pub authorization: Option<String>,
    pub user_agent: Option<String>,
}

#[derive(Default)]
struct ServerState {
    routes: Mutex<Vec<Route>>,
    seen: Mutex<Vec<Seen>>,
}

/// A running fake server; stops when dropped.
pub struct FakeWeb {
    state: Arc<ServerState>,
    loopback: Loopback,
}

impl FakeWeb {
    /// A server with its own runtime on a background thread (usable from any test).
    pub fn start() -> FakeWeb {
        let state = Arc::new(ServerState::default());
        let app = Router::new().fallback(handle).with_state(state.clone());
        FakeWeb {
            state,
            loopback: Loopback::background("fake-web", app),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.loopback.addr())
    }

    /// Answers requests to `path` whose decoded query contains each of `query_has` (the first
    /// route added that fits answers).
    pub fn route(&self, path: &str, query_has: &[&str], answer: FakeAnswer) {
        self.add(path, query_has, answer, false);
    }

    /// Like [`FakeWeb::route`], once; it goes before the routes added with `route`.
    pub fn route_once(&self, path: &str, query_has: &[&str], answer: FakeAnswer) {
        self.add(path, query_has, answer, true);
    }

    fn add(&self, path: &str, query_has: &[&str], answer: FakeAnswer, once: bool) {
        let route = Route {
            path: path.into(),
            query_has: query_has.iter().map(|s| s.to_string()).collect(),
            answer,
            once,
        };
        let mut routes = self.state.routes.lock().unwrap();
        if once {
            let at = routes.iter().take_while(|r| r.once).count();
            routes.insert(at, route);
        } else {
            routes.push(route);
        }
    }

    /// A GitHub repository `owner/name` with `files` (`/`-separated paths and their text) on
    /// its default branch `branch`, as the API at this server's URL shows it: the repository
    /// (`/repos/O/R`, its default branch), its recursive git tree (`/repos/O/R/git/trees/
    /// BRANCH?recursive=1`), its top directory (`/repos/O/R/contents`, folders included), and
    /// each file's text at `/raw/O/R/BRANCH/PATH` (where a stand-in API's raw files are
    /// looked for). Routes added before win: a test can answer one of these otherwise.
    pub fn repository(&self, full_name: &str, branch: &str, files: &[(&str, &str)]) {
        let raw = |path: &str| format!("{}/raw/{full_name}/{branch}/{path}", self.url());
        self.route(
            &format!("/repos/{full_name}"),
            &[],
            FakeAnswer::json(
                serde_json::json!({"full_name": full_name, "default_branch": branch}).to_string(),
            ),
        );
        let mut tree: Vec<serde_json::Value> = Vec::new();
        let mut folders: Vec<String> = Vec::new();
        for (path, _) in files {
            let parts: Vec<&str> = path.split('/').collect();
            for depth in 1..parts.len() {
                let folder = parts[..depth].join("/");
                if !folders.contains(&folder) {
                    tree.push(
                        serde_json::json!({"path": folder, "mode": "040000", "type": "tree"}),
                    );
                    folders.push(folder);
                }
            }
        }
        let mut top: Vec<serde_json::Value> = folders
            .iter()
            .filter(|f| !f.contains('/'))
            .map(|f| {
                serde_json::json!({"name": f, "path": f, "type": "dir", "size": 0,
                    "download_url": null})
            })
            .collect();
        for (path, text) in files {
            tree.push(
                serde_json::json!({"path": path, "mode": "100644", "type": "blob",
                "size": text.len()}),
            );
            if !path.contains('/') {
                top.push(
                    serde_json::json!({"name": path, "path": path, "type": "file",
                    "size": text.len(), "download_url": raw(path)}),
                );
            }
            self.route(
                &format!("/raw/{full_name}/{branch}/{path}"),
                &[],
                FakeAnswer::text(*text),
            );
        }
        self.route(
            &format!("/repos/{full_name}/git/trees/{branch}"),
            &["recursive=1"],
            FakeAnswer::json(
                serde_json::json!({"sha": "0", "tree": tree, "truncated": false}).to_string(),
            ),
        );
        self.route(
            &format!("/repos/{full_name}/contents"),
            &[],
            FakeAnswer::json(serde_json::Value::Array(top).to_string()),
        );
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response<Body> {
    let query = uri
        .query()
        .map(|q| {
            reqwest::Url::parse(&format!("http://x/?{q}"))
                .map(|u| {
                    u.query_pairs()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join("&")
                })
                .unwrap_or_else(|_| q.to_string())
        })
        .unwrap_or_default();
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let seen = Seen {
        path: uri.path().to_string(),
        query,
        authorization: header("authorization"),
        user_agent: header("user-agent"),
    };
    state.seen.lock().unwrap().push(seen.clone());
    let answer = {
        let mut routes = state.routes.lock().unwrap();
        let at = routes.iter().position(|r| {
            r.path == seen.path && r.query_has.iter().all(|w| seen.query.contains(w))
        });
        match at {
            Some(i) if routes[i].once => Some(routes.remove(i).answer),
            Some(i) => Some(routes[i].answer.clone()),
            None => None,
        }
    };
    let answer = answer.unwrap_or_else(|| FakeAnswer::status(404, "Not Found"));
    if let Some(d) = answer.delay {
        tokio::time::sleep(d).await;
    }
    let mut b = Response::builder().status(answer.status);
    for (name, value) in &answer.headers {
        b = b.header(name.as_str(), value.as_str());
    }
    b.body(Body::from(answer.body)).unwrap()
}
