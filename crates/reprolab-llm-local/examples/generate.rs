//! Load a local model, answer one prompt, print timings. For measuring speeds:
//!
//! ```text
//! cargo run -p reprolab-llm-local --release --example generate -- smollm2 "Reply with the JSON {\"lr\": 0.01}" [max_tokens] [temperature]
//! ```
//! The model is a known name (smollm2, gemma3-270m) fetched into the models directory, or a
//! path to a GGUF file. Set RAYON_NUM_THREADS to choose the number of threads; with 1 thread the
//! tokens per CPU-second approximate the speed on an idle machine.

use std::path::PathBuf;
use std::time::Instant;

use reprolab_llm_local::{GenOptions, KnownModel, LocalModel, ensure_weights, models_dir};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: generate MODEL PROMPT [MAX_TOKENS] [TEMPERATURE]";
    let model = args.next().ok_or(usage)?;
    let prompt = args.next().ok_or(usage)?;
    let max_tokens = args.next().map(|s| s.parse()).transpose()?.unwrap_or(64);
    let temperature = args.next().map(|s| s.parse()).transpose()?.unwrap_or(0.0);

    let path = match model.parse::<KnownModel>() {
        Ok(known) => ensure_weights(known, &models_dir(), "python3".as_ref(), &|m| {
            eprintln!("{m}")
        })?,
        Err(_) => PathBuf::from(model),
    };
    let started = Instant::now();
    let mut llm = LocalModel::load(&path)?;
    let load = started.elapsed();
    let opts = GenOptions {
        max_tokens,
        temperature,
        ..GenOptions::default()
    };
    let messages = [("user", prompt.as_str())];
    // One token first: its CPU time is the prompt's (prefill), the rest is decoding.
    let cpu_start = cpu_seconds();
    llm.chat(
        &messages,
        &GenOptions {
            max_tokens: 1,
            ..opts.clone()
        },
    )?;
    let prefill_cpu = cpu_seconds() - cpu_start;
    let cpu_start = cpu_seconds();
    let reply = llm.chat(&messages, &opts)?;
    let decode_cpu = cpu_seconds() - cpu_start - prefill_cpu;
    println!("{}", reply.text);
    eprintln!(
        "model {} | load {:.2}s | prompt {} tok in {:.2}s ({:.1} tok/s) | \
         decode {} tok in {:.2}s ({:.1} tok/s) | CPU: prefill {:.2}s, decode {:.1} tok/CPU-s | stopped {}",
        llm.name(),
        load.as_secs_f64(),
        reply.prompt_tokens,
        reply.prefill_time.as_secs_f64(),
        reply.prompt_tokens as f64 / reply.prefill_time.as_secs_f64(),
        reply.completion_tokens,
        reply.decode_time.as_secs_f64(),
        // The first decoded token comes from the prefill's logits: n tokens, n-1 forwards.
        reply.completion_tokens.saturating_sub(1) as f64 / reply.decode_time.as_secs_f64(),
        prefill_cpu,
        reply.completion_tokens.saturating_sub(1) as f64 / decode_cpu,
        reply.stopped
    );
    Ok(())
}

/// User + system CPU time of the whole process. On a machine shared with other jobs, wall-clock
/// speed depends on the neighbours; with one thread, CPU time approximates an idle machine.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the pointer; RUSAGE_SELF is always valid.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
