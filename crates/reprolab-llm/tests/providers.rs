//! The OpenAI-compatible and Anthropic providers over real HTTP against the scripted fake
//! servers: what is sent, what is understood, and every failure mode.

use std::time::Duration;

use reprolab_llm::fake::{FakeReply, FakeServer};
use reprolab_llm::{
    Anthropic, ChatModel, ChatRequest, Endpoint, FinishReason, LlmError, Message, OpenAiCompatible,
    Secret,
};
use serde_json::json;

fn openai(server: &FakeServer) -> OpenAiCompatible {
    OpenAiCompatible::new(Endpoint::new("openai", "fake-model", &server.base_url())).unwrap()
}

fn anthropic(server: &FakeServer, key: &str) -> Anthropic {
    Anthropic::new(
        Endpoint::new("anthropic", "claude-fake", &server.base_url())
            .with_key(Some(Secret::new(key))),
    )
    .unwrap()
}

#[tokio::test]
async fn openai_sends_the_request_and_reads_the_answer() {
    let server = FakeServer::openai([FakeReply::Text("hello there world".into())]);
    let model = openai(&server);
    assert_eq!(model.name(), "openai:fake-model");
    let req = ChatRequest::with_system("be terse", "say hi")
        .temperature(0.3)
        .max_tokens(50);
    let r = model.chat(&req).await.unwrap();
    assert_eq!(r.text(), "hello there world");
    assert_eq!(r.choices.len(), 1);
    assert_eq!(r.choices[0].finish, FinishReason::Stop);
    assert_eq!(r.usage.prompt_tokens, 4);
    assert_eq!(r.usage.completion_tokens, 3);
    assert_eq!(r.model, "fake-model");
    assert!(!r.replayed);
    assert_eq!(r.cost_usd, None);

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["model"], "fake-model");
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "system", "content": "be terse"}, {"role": "user", "content": "say hi"}])
    );
    assert_eq!(sent.body["temperature"], 0.3);
    assert_eq!(sent.body["max_tokens"], 50);
    assert!(sent.body.get("n").is_none());
    assert!(sent.body.get("response_format").is_none());
    assert!(sent.body.get("seed").is_none());
    assert!(sent.header("authorization").is_none());
}

#[tokio::test]
async fn openai_json_mode_seed_and_key_header() {
    let server = FakeServer::openai([]);
    server.require_key("sk-test-1");
    let model = OpenAiCompatible::new(
        Endpoint::new("openai", "m", &server.base_url()).with_key(Some(Secret::new("sk-test-1"))),
    )
    .unwrap();
    let r = model
        .chat(&ChatRequest::user("{\"a\": 1}").json_mode(true).seed(7))
        .await
        .unwrap();
    assert_eq!(r.text(), "{\"a\": 1}");
    let sent = &server.requests()[0];
    assert_eq!(sent.body["response_format"], json!({"type": "json_object"}));
    assert_eq!(sent.body["seed"], 7);
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-1"));
    // The key travels only in the header.
    assert!(!sent.body.to_string().contains("sk-test-1"));
}

#[tokio::test]
async fn openai_n_choices_in_one_call() {
    let server = FakeServer::openai([FakeReply::Text("same".into())]);
    let r = openai(&server)
        .chat(&ChatRequest::user("q").n(3))
        .await
        .unwrap();
    assert_eq!(r.choices.len(), 3);
    assert_eq!(server.request_count(), 1);
    assert_eq!(server.requests()[0].body["n"], 3);
}

#[tokio::test]
async fn openai_calls_again_when_the_server_ignores_n() {
    // Like Ollama: one choice per call whatever n is.
    let one = |t: &str| FakeReply::Choices(vec![t.into()]);
    let server = FakeServer::openai([one("a"), one("b"), one("c")]);
    let r = openai(&server)
        .chat(&ChatRequest::user("q").n(3))
        .await
        .unwrap();
    let texts: Vec<&str> = r.choices.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["a", "b", "c"]);
    let asked: Vec<u64> = server
        .requests()
        .iter()
        .map(|q| q.body.get("n").and_then(|v| v.as_u64()).unwrap_or(1))
        .collect();
    assert_eq!(asked, [3, 2, 1]);
    // Usage of all three calls is summed.
    assert_eq!(r.usage.prompt_tokens, 3);
    assert_eq!(r.usage.completion_tokens, 3);
}

#[tokio::test]
async fn openai_extra_choices_are_cut_to_n() {
    let server = FakeServer::openai([FakeReply::Choices(vec!["a".into(), "b".into()])]);
    let r = openai(&server).chat(&ChatRequest::user("q")).await.unwrap();
    assert_eq!(r.choices.len(), 1);
}

#[tokio::test]
async fn malformed_bodies_are_bad_responses() {
    let server = FakeServer::openai([
        FakeReply::Malformed("<html>502 Bad Gateway</html>".into()),
        FakeReply::Malformed("{\"choices\": [{\"message\": {\"content\": \"cut".into()),
        FakeReply::Malformed("{\"object\": \"list\", \"data\": []}".into()),
        FakeReply::Choices(vec![]),
    ]);
    let model = openai(&server);
    let req = ChatRequest::user("q");
    let e = model.chat(&req).await.unwrap_err();
    assert!(matches!(e, LlmError::BadResponse(_)), "{e}");
    assert!(
        e.to_string().contains("not JSON") && e.to_string().contains("502 Bad Gateway"),
        "{e}"
    );
    let e = model.chat(&req).await.unwrap_err();
    assert!(
        matches!(e, LlmError::BadResponse(_)) && e.to_string().contains("not JSON"),
        "{e}"
    );
    let e = model.chat(&req).await.unwrap_err();
    assert!(e.to_string().contains("\"choices\" array"), "{e}");
    let e = model.chat(&req).await.unwrap_err();
    assert!(e.to_string().contains("no choices"), "{e}");
}

#[tokio::test]
async fn truncated_answers_surface_as_length() {
    let server = FakeServer::openai([FakeReply::Truncated("def f(x):\n    return".into())]);
    let r = openai(&server)
        .chat(&ChatRequest::user("q").max_tokens(5))
        .await
        .unwrap();
    assert_eq!(r.choices[0].finish, FinishReason::Length);
    assert_eq!(r.text(), "def f(x):\n    return");
}

#[tokio::test]
async fn huge_responses_are_rejected() {
    // Over the default 8 MiB cap.
    let server = FakeServer::openai([FakeReply::Huge(9 * 1024 * 1024), FakeReply::Huge(1000)]);
    let model = openai(&server);
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(matches!(e, LlmError::BadResponse(_)), "{e}");
    assert!(e.to_string().contains("larger than 8388608 bytes"), "{e}");
    // The next, normal-sized answer still works on the same client.
    assert_eq!(
        model
            .chat(&ChatRequest::user("q"))
            .await
            .unwrap()
            .text()
            .len(),
        1000
    );

    let small = FakeServer::openai([FakeReply::Huge(5000)]);
    let capped = OpenAiCompatible::new(
        Endpoint::new("openai", "m", &small.base_url()).with_max_response_bytes(4096),
    )
    .unwrap();
    let e = capped.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(e.to_string().contains("larger than 4096 bytes"), "{e}");
}

#[tokio::test]
async fn slow_servers_time_out() {
    let server = FakeServer::openai([FakeReply::Delay(
        Duration::from_secs(5),
        Box::new(FakeReply::Text("late".into())),
    )]);
    let model = OpenAiCompatible::new(
        Endpoint::new("openai", "m", &server.base_url()).with_timeout(Duration::from_millis(300)),
    )
    .unwrap();
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(matches!(e, LlmError::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("--llm-timeout"), "{e}");
    assert!(e.is_retryable());
}

#[tokio::test]
async fn http_errors_carry_status_and_hint() {
    let server = FakeServer::openai([
        FakeReply::Status(404, None),
        FakeReply::Status(503, Some(3)),
        FakeReply::Status(429, Some(2)),
    ]);
    let model = openai(&server);
    let req = ChatRequest::user("q");
    match model.chat(&req).await.unwrap_err() {
        e @ LlmError::Http { status: 404, .. } => {
            assert!(e.to_string().contains("check the model name"), "{e}");
            assert!(!e.is_retryable());
        }
        e => panic!("{e}"),
    }
    match model.chat(&req).await.unwrap_err() {
        e @ LlmError::Http { status: 503, .. } => {
            assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
            assert!(e.is_retryable());
        }
        e => panic!("{e}"),
    }
    match model.chat(&req).await.unwrap_err() {
        e @ LlmError::RateLimited { .. } => {
            assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
            assert!(e.to_string().contains("--llm-concurrency"), "{e}");
        }
        e => panic!("{e}"),
    }
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let model = OpenAiCompatible::new(Endpoint::new(
        "openai",
        "m",
        &format!("http://127.0.0.1:{port}/v1"),
    ))
    .unwrap();
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(matches!(e, LlmError::Connect { .. }), "{e}");
    assert!(e.to_string().contains("is the server running"), "{e}");
}

#[tokio::test]
async fn anthropic_maps_system_n_and_stop_reason() {
    let server = FakeServer::anthropic([
        FakeReply::Text("first".into()),
        FakeReply::Truncated("second".into()),
    ]);
    let model = anthropic(&server, "sk-ant-test");
    assert_eq!(model.name(), "anthropic:claude-fake");
    let req = ChatRequest {
        messages: vec![
            Message::system("you are a DL expert"),
            Message::user("why NaN?"),
        ],
        n: 2,
        ..ChatRequest::default()
    };
    let r = model.chat(&req).await.unwrap();
    let texts: Vec<&str> = r.choices.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["first", "second"]);
    assert_eq!(r.choices[0].finish, FinishReason::Stop);
    assert_eq!(r.choices[1].finish, FinishReason::Length);
    assert_eq!(r.usage.prompt_tokens, 2 * 7);
    assert_eq!(r.usage.completion_tokens, 2);

    let sent = server.requests();
    assert_eq!(sent.len(), 2, "n = 2 is two calls");
    for q in &sent {
        assert_eq!(q.path, "/v1/messages");
        assert_eq!(q.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(q.header("anthropic-version"), Some("2023-06-01"));
        assert!(q.header("authorization").is_none());
        assert_eq!(q.body["system"], "you are a DL expert");
        assert_eq!(
            q.body["messages"],
            json!([{"role": "user", "content": "why NaN?"}])
        );
        assert_eq!(q.body["max_tokens"], 1024);
        assert!(q.body.get("n").is_none());
        assert!(!q.body.to_string().contains("sk-ant-test"));
    }
}

#[tokio::test]
async fn anthropic_errors() {
    let server = FakeServer::anthropic([
        FakeReply::Status(529, None),
        FakeReply::Malformed("{\"type\": \"message\"}".into()),
    ]);
    let model = anthropic(&server, "k");
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(
        matches!(e, LlmError::Http { status: 529, .. }) && e.is_retryable(),
        "{e}"
    );
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(e.to_string().contains("\"content\" array"), "{e}");
    let e = model
        .chat(&ChatRequest {
            messages: vec![Message::system("only system")],
            ..ChatRequest::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(e, LlmError::Config(_)), "{e}");
}

#[tokio::test]
async fn keys_never_leak_into_errors_or_debug() {
    let secret = "sk-wrong-secret-123456";
    // The fake answers 401 and echoes the key it got, as some servers do.
    let oa = FakeServer::openai([]);
    oa.require_key("sk-right");
    let model = OpenAiCompatible::new(
        Endpoint::new("openai", "m", &oa.base_url()).with_key(Some(Secret::new(secret))),
    )
    .unwrap();
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(matches!(e, LlmError::Http { status: 401, .. }), "{e}");
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(secret), "{shown}");
    assert!(shown.contains("Incorrect API key provided: ***"), "{shown}");
    let dbg = format!("{model:?}");
    assert!(!dbg.contains(secret) && dbg.contains("***"), "{dbg}");

    let an = FakeServer::anthropic([]);
    an.require_key("right");
    let model = anthropic(&an, secret);
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(!format!("{e} {e:?} {model:?}").contains(secret));
}

/// A one-shot raw HTTP server that answers any request with `response` bytes, then closes:
/// for wire-level faults the fake server cannot produce (chunked bodies, cut connections).
fn raw_server(response: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        // Read the request head and body (Content-Length) before answering.
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = sock.read(&mut chunk).unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(head_end) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if buf.len() >= head_end + 4 + len {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        let _ = sock.write_all(&response);
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn chunked_bodies_are_capped_while_streaming() {
    // No Content-Length: the cap must trip while reading, not after buffering everything.
    let mut resp =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..32 {
        resp.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        resp.extend_from_slice(&chunk);
        resp.extend_from_slice(b"\r\n");
    }
    resp.extend_from_slice(b"0\r\n\r\n");
    let base = raw_server(resp);
    let model = OpenAiCompatible::new(
        Endpoint::new("openai", "m", &base).with_max_response_bytes(1024 * 1024),
    )
    .unwrap();
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(e.to_string().contains("larger than 1048576 bytes"), "{e}");
}

#[tokio::test]
async fn a_connection_cut_mid_body_is_a_transport_error() {
    let body = r#"{"choices": [{"message": {"content": "the answer is"#;
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{body}"
    );
    let base = raw_server(resp.into_bytes());
    let model = OpenAiCompatible::new(Endpoint::new("openai", "m", &base)).unwrap();
    let e = model.chat(&ChatRequest::user("q")).await.unwrap_err();
    assert!(matches!(e, LlmError::Transport { .. }), "{e}");
    assert!(e.is_retryable());
}
