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

use candle_core::Result;

use crate::decoder::{Activation, Gguf, Heads, Layer, ModelWeights, RmsNorm, Rope, metadata};

const DEFAULT_SLIDING_WINDOW_TYPE: usize = 6;
const DEFAULT_ROPE_FREQUENCY: f32 = 1_000_000.;
const DEFAULT_ROPE_FREQUENCY_SLIDING: f32 = 10_000.;

pub(crate) fn load(gguf: Gguf) -> Result<ModelWeights> {
    let prefix = ["gemma3", "gemma2", "gemma", "gemma-embedding"]
        .into_iter()
        .find(|p| {
            gguf.ct
                .metadata
                .contains_key(&format!("{p}.attention.head_count"))
        })
        .unwrap_or("gemma3");
    let md = |key: &str| metadata(gguf.ct, prefix, key);
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
    let rope = |base| Rope::new(key_length, base, gguf.max_positions, false, gguf.device);
    let (rope_global, rope_local) = (rope(rope_global)?, rope(rope_local)?);

    let heads = Heads {
        n_head: head_count,
        n_kv_head: head_count_kv,
        head_dim: key_length,
    };
    let mut layers = Vec::with_capacity(block_count);
    for i in 0..block_count {
        // Every `sliding_window_type`-th layer is global, the others local.
        let is_sliding = (i + 1) % sliding_window_type > 0;
        let rope = if is_sliding {
            &rope_local
        } else {
            &rope_global
        };
        let mut layer = Layer::read(
            gguf.tensor,
            i,
            rms_norm_eps,
            Activation::GeluTanh,
            heads,
            rope.clone(),
        )?;
        let mut norm = |s: &str| {
            RmsNorm::from_qtensor((gguf.tensor)(&format!("blk.{i}.{s}.weight"))?, rms_norm_eps)
        };
        layer.qk_norm = Some((norm("attn_q_norm")?, norm("attn_k_norm")?));
        layer.post_attention_norm = Some(norm("post_attention_norm")?);
        layer.post_ffn_norm = Some(norm("post_ffw_norm")?);
        layer.sliding_window = is_sliding.then_some(sliding_window_size);
        layers.push(layer);
    }
    let scale = Some((embedding_length as f64).sqrt());
    ModelWeights::read(
        gguf.tensor,
        gguf.device,
        rms_norm_eps,
        embedding_length,
        scale,
        layers,
    )
}
