//! Llama-architecture GGUF models (SmolLM2 and its fine-tunes) as a [`ModelWeights`]: pre-norm
//! blocks, SiLU-gated MLP, interleaved RoPE (llama's GGUF weights are permuted for it), the
//! output projection tied to the embeddings when the file has none. Mixture-of-experts files
//! (`llama.expert_count` > 1) are refused.

use candle_core::quantized::{QMatMul, gguf_file};
use candle_core::{Device, Result};
use candle_nn::Embedding;

use crate::decoder::{Activation, Layer, Mlp, ModelWeights, RmsNorm, Rope, metadata};

const DEFAULT_ROPE_FREQUENCY: f32 = 10_000.;

pub(crate) fn from_gguf<R: std::io::Seek + std::io::Read>(
    ct: gguf_file::Content,
    reader: &mut R,
    device: &Device,
    max_positions: usize,
) -> Result<ModelWeights> {
    let md = |key: &str| metadata(&ct, "llama", key);
    let experts = md("expert_count").and_then(|v| v.to_u32()).unwrap_or(0);
    if experts > 1 {
        candle_core::bail!("a mixture of {experts} experts: only dense llama models are supported");
    }
    let head_count = md("attention.head_count")?.to_u32()? as usize;
    let head_count_kv = md("attention.head_count_kv")?.to_u32()? as usize;
    let block_count = md("block_count")?.to_u32()? as usize;
    let embedding_length = md("embedding_length")?.to_u32()? as usize;
    let rms_norm_eps = md("attention.layer_norm_rms_epsilon")?.to_f32()?;
    let head_dim = embedding_length / head_count;
    let rope_dim = md("rope.dimension_count")
        .and_then(|v| v.to_u32())
        .map_or(head_dim, |d| d as usize);
    if rope_dim != head_dim {
        candle_core::bail!("RoPE over {rope_dim} of {head_dim} head dimensions is not supported");
    }
    let rope_base = md("rope.freq_base")
        .and_then(|v| v.to_f32())
        .unwrap_or(DEFAULT_ROPE_FREQUENCY);
    let rope = Rope::new(head_dim, rope_base, max_positions, true, device)?;

    let mut tensor = |name: &str| ct.tensor(reader, name, device);
    let embeddings_q = tensor("token_embd.weight")?;
    let embeddings = embeddings_q.dequantize(device)?;
    let norm = RmsNorm::from_qtensor(tensor("output_norm.weight")?, rms_norm_eps)?;
    let output = match tensor("output.weight") {
        Ok(t) => t,
        Err(_) => embeddings_q,
    };
    let mut layers = Vec::with_capacity(block_count);
    for i in 0..block_count {
        let mut get = |s: &str| tensor(&format!("blk.{i}.{s}.weight"));
        let attention_norm = RmsNorm::from_qtensor(get("attn_norm")?, rms_norm_eps)?;
        let ffn_norm = RmsNorm::from_qtensor(get("ffn_norm")?, rms_norm_eps)?;
        let mut qmm = |s: &str| QMatMul::from_qtensor(get(s)?);
        layers.push(Layer {
            wq: qmm("attn_q")?,
            wk: qmm("attn_k")?,
            wv: qmm("attn_v")?,
            wo: qmm("attn_output")?,
            mlp: Mlp {
                gate: qmm("ffn_gate")?,
                up: qmm("ffn_up")?,
                down: qmm("ffn_down")?,
                activation: Activation::Silu,
            },
            qk_norm: None,
            attention_norm,
            post_attention_norm: None,
            ffn_norm,
            post_ffn_norm: None,
            n_head: head_count,
            n_kv_head: head_count_kv,
            head_dim,
            sliding_window: None,
            rope: rope.clone(),
            kv_cache: None,
        });
    }
    Ok(ModelWeights {
        embeddings: Embedding::new(embeddings, embedding_length),
        embedding_scale: None,
        layers,
        norm,
        output: QMatMul::from_qtensor(output)?,
    })
}
