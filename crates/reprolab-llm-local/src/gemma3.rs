//! Gemma 3 GGUF models as a [`ModelWeights`]: norms on queries and keys and after each
//! sub-block, embeddings scaled by √hidden size, a GELU (tanh) gated MLP, halved RoPE with a
//! local and a global base frequency, and every sixth layer global while the others attend to
//! a sliding window.
//!
//! Differs from candle-transformers 0.11.1 `quantized_gemma3`, which this was first adapted
//! from, where candle is wrong or costly (found on Gemma-3-270M):
//! - candle gates the MLP with SiLU; Gemma uses GELU (`gelu_pytorch_tanh` in Hugging Face's
//!   config, GELU in llama.cpp). With SiLU the logits correlated 0.91–0.96 with Hugging Face's
//!   on the same dequantized weights and the top token differed at 2 of 4 positions; with GELU
//!   0.998–0.9995 and 4 of 4 (test `logits_agree_with_hugging_face`).
//! - candle builds RoPE tables for 131,072 positions in every one of the 18 layers: 2.4 GB of
//!   memory and ~25 s of a 29 s load on two cores. Here the two distinct tables (local and
//!   global base frequency) are built once, for the context this crate allows.
//! - candle applies the sliding window only while reading the prompt; when generating one token
//!   at a time every layer sees the whole cache. Here local layers see the last `window` keys
//!   in both phases.
//! - a prompt fed at a non-zero position built a mask of mixed dtypes (an error in candle);
//!   the mask here is built from absolute positions.

use candle_core::quantized::{QMatMul, QTensor, gguf_file};
use candle_core::{Device, Result};
use candle_nn::Embedding;

use crate::decoder::{Activation, Layer, Mlp, ModelWeights, RmsNorm, Rope, metadata};

const DEFAULT_SLIDING_WINDOW_TYPE: usize = 6;
const DEFAULT_ROPE_FREQUENCY: f32 = 1_000_000.;
const DEFAULT_ROPE_FREQUENCY_SLIDING: f32 = 10_000.;

pub(crate) fn from_gguf<R: std::io::Seek + std::io::Read>(
    ct: gguf_file::Content,
    reader: &mut R,
    device: &Device,
    max_positions: usize,
) -> Result<ModelWeights> {
    let prefix = ["gemma3", "gemma2", "gemma", "gemma-embedding"]
        .into_iter()
        .find(|p| {
            ct.metadata
                .contains_key(&format!("{p}.attention.head_count"))
        })
        .unwrap_or("gemma3");
    let md = |key: &str| metadata(&ct, prefix, key);
    let head_count = md("attention.head_count")?.to_u32()? as usize;
    let head_count_kv = md("attention.head_count_kv")?.to_u32()? as usize;
    let block_count = md("block_count")?.to_u32()? as usize;
    let embedding_length = md("embedding_length")?.to_u32()? as usize;
    let key_length = md("attention.key_length")?.to_u32()? as usize;
    let rms_norm_eps = md("attention.layer_norm_rms_epsilon")?.to_f32()?;
    let sliding_window_size = md("attention.sliding_window")?.to_u32()? as usize;
    let sliding_window_type = md("attention.sliding_window_type")
        .and_then(|m| Ok(m.to_u32()? as usize))
        .unwrap_or(DEFAULT_SLIDING_WINDOW_TYPE);
    let rope_global = md("rope.freq_base")
        .and_then(|m| m.to_f32())
        .unwrap_or(DEFAULT_ROPE_FREQUENCY);
    let rope_local = md("rope.local_freq_base")
        .and_then(|m| m.to_f32())
        .unwrap_or(DEFAULT_ROPE_FREQUENCY_SLIDING);
    let rope_global = Rope::new(key_length, rope_global, max_positions, false, device)?;
    let rope_local = Rope::new(key_length, rope_local, max_positions, false, device)?;

    let mut tensor = |name: &str| ct.tensor(reader, name, device);
    let embeddings = tensor("token_embd.weight")?.dequantize(device)?;
    let norm = RmsNorm::from_qtensor(tensor("output_norm.weight")?, rms_norm_eps)?;
    // Gemma ties the output projection to the embeddings when there is no output.weight.
    let output: QTensor = match tensor("output.weight") {
        Ok(t) => t,
        Err(_) => tensor("token_embd.weight")?,
    };

    let mut layers = Vec::with_capacity(block_count);
    for i in 0..block_count {
        let mut get = |s: &str| tensor(&format!("blk.{i}.{s}.weight"));
        let mut norm = |s: &str| RmsNorm::from_qtensor(get(s)?, rms_norm_eps);
        let qk_norm = (norm("attn_q_norm")?, norm("attn_k_norm")?);
        let attention_norm = norm("attn_norm")?;
        let post_attention_norm = norm("post_attention_norm")?;
        let ffn_norm = norm("ffn_norm")?;
        let post_ffn_norm = norm("post_ffw_norm")?;
        let mut qmm = |s: &str| QMatMul::from_qtensor(tensor(&format!("blk.{i}.{s}.weight"))?);
        // Every `sliding_window_type`-th layer is global, the others local.
        let is_sliding = (i + 1) % sliding_window_type > 0;
        layers.push(Layer {
            wq: qmm("attn_q")?,
            wk: qmm("attn_k")?,
            wv: qmm("attn_v")?,
            wo: qmm("attn_output")?,
            mlp: Mlp {
                gate: qmm("ffn_gate")?,
                up: qmm("ffn_up")?,
                down: qmm("ffn_down")?,
                activation: Activation::GeluTanh,
            },
            qk_norm: Some(qk_norm),
            attention_norm,
            post_attention_norm: Some(post_attention_norm),
            ffn_norm,
            post_ffn_norm: Some(post_ffn_norm),
            n_head: head_count,
            n_kv_head: head_count_kv,
            head_dim: key_length,
            sliding_window: is_sliding.then_some(sliding_window_size),
            rope: if is_sliding {
                rope_local.clone()
            } else {
                rope_global.clone()
            },
            kv_cache: None,
        });
    }
    Ok(ModelWeights {
        embeddings: Embedding::new(embeddings, embedding_length),
        embedding_scale: Some((embedding_length as f64).sqrt()),
        layers,
        norm,
        output: QMatMul::from_qtensor(output)?,
    })
}
