//! `reprolab llm chat` (ask a model once: checks a provider, a key, a recording) and
//! `reprolab llm calls` (the LLM calls recorded in the store).

use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use reprolab_llm::parse::extract_json;
use reprolab_llm::{ChatRequest, FinishReason, Message, request_hash};
use serde_json::json;

use crate::cli::{Global, LlmCallsArgs, LlmChatArgs};
use crate::llm::{self, StoreCallLog};
use crate::{context, table};

pub async fn chat(g: &Global, a: &LlmChatArgs) -> Result<ExitCode> {
    let prompt = if a.prompt == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the prompt from stdin")?;
        s
    } else {
        a.prompt.clone()
    };
    let mut messages = Vec::new();
    if let Some(system) = &a.system {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(prompt));
    let req = ChatRequest {
        messages,
        temperature: a.temperature,
        max_tokens: a.max_tokens,
        n: a.n,
        seed: a.seed,
        json_mode: a.json_mode,
    };

    let store = context::open_store(g)?;
    let run_id = store.start_run("llm chat", &json!({"llm": a.llm.llm, "n": a.n}))?;
    let log = Arc::new(StoreCallLog::new(store, Some(run_id)));
    let session = match llm::open_with_log(&a.llm, llm::local_factory(g), log.clone()) {
        Ok(s) => s,
        Err(e) => {
            let _ = log
                .store()
                .finish_run(run_id, "failed", &json!({"error": format!("{e:#}")}));
            return Err(e);
        }
    };
    let result = session.model.chat(&req).await;
    let totals = session.meter.snapshot();
    let status = if result.is_ok() { "ok" } else { "failed" };
    log.store()
        .finish_run(run_id, status, &serde_json::to_value(totals)?)?;
    let resp = result?;

    if g.json {
        let choices: Vec<_> = resp
            .choices
            .iter()
            .map(|c| {
                let mut v = json!({"text": c.text, "finish": c.finish});
                if a.json_mode {
                    match extract_json(&c.text) {
                        Ok(parsed) => v["parsed"] = parsed,
                        Err(e) => v["parse_error"] = json!(e.to_string()),
                    }
                }
                v
            })
            .collect();
        let out = json!({
            "model": session.model.name(), "served_by": resp.model, "choices": choices,
            "usage": resp.usage, "latency_ms": resp.latency_ms, "cost_usd": resp.cost_usd,
            "replayed": resp.replayed, "request_hash": request_hash(&req), "retries": totals.retries,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let many = resp.choices.len() > 1;
        for (i, c) in resp.choices.iter().enumerate() {
            if many {
                println!("--- choice {} ---", i + 1);
            }
            println!("{}", c.text);
            if c.finish == FinishReason::Length {
                eprintln!(
                    "(choice {} was cut at --max-tokens {})",
                    i + 1,
                    a.max_tokens
                );
            }
            if a.json_mode
                && let Err(e) = extract_json(&c.text)
            {
                eprintln!("(choice {} is not JSON: {e})", i + 1);
            }
        }
        eprintln!(
            "{} ({}){}: {} prompt + {} completion tokens, {} ms, cost {}{}",
            session.model.name(),
            resp.model,
            if resp.replayed { ", replayed" } else { "" },
            resp.usage.prompt_tokens,
            resp.usage.completion_tokens,
            resp.latency_ms,
            resp.cost_usd
                .map_or("unknown".into(), |c| format!("${c:.6}")),
            if totals.retries > 0 {
                format!(", {} retries", totals.retries)
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn calls(g: &Global, a: &LlmCallsArgs) -> Result<ExitCode> {
    let store = context::open_store(g)?;
    let calls = store.llm_calls(a.limit)?;
    if g.json {
        println!("{}", serde_json::to_string_pretty(&calls)?);
        return Ok(ExitCode::SUCCESS);
    }
    if calls.is_empty() {
        println!("no LLM calls recorded in {}", store.path().display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![
        [
            "id",
            "when",
            "run",
            "model",
            "tokens in",
            "out",
            "ms",
            "cost $",
            "result",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for c in &calls {
        let result = match (&c.error, c.replayed) {
            (Some(e), _) => format!("error: {}", e.chars().take(60).collect::<String>()),
            (None, true) => "ok (replayed)".into(),
            (None, false) => "ok".into(),
        };
        rows.push(vec![
            c.id.to_string(),
            c.created_at
                .get(..19)
                .unwrap_or(&c.created_at)
                .replace('T', " "),
            c.run_id.map_or("-".into(), |r| r.to_string()),
            c.model.clone(),
            c.prompt_tokens.to_string(),
            c.completion_tokens.to_string(),
            c.latency_ms.to_string(),
            c.cost_usd.map_or("-".into(), |x| format!("{x:.6}")),
            result,
        ]);
    }
    print!("{}", table::render(&rows));
    let tokens: u64 = calls
        .iter()
        .map(|c| c.prompt_tokens + c.completion_tokens)
        .sum();
    // fold from +0.0: an empty f64 `sum` is -0.0, printed as "-0.000000".
    let cost = calls
        .iter()
        .filter_map(|c| c.cost_usd)
        .fold(0.0, |a, b| a + b);
    println!(
        "{} calls shown, {tokens} tokens, ${cost:.6} (known prices only)",
        calls.len()
    );
    Ok(ExitCode::SUCCESS)
}
