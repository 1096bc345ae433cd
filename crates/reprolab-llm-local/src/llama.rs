//! Llama-architecture GGUF models (SmolLM2 and its fine-tunes) as a [`ModelWeights`]: pre-norm
//! blocks, SiLU-gated MLP, interleaved RoPE (llama's GGUF weights are permuted for it), the
//! output projection tied to the embeddings when the file has none. Mixture-of-experts files
//! (`llama.expert_count` > 1) are refused.

use candle_core::Result;

use crate::decoder::{Activation, Gguf, Heads, Layer, ModelWeights, Rope, metadata};

const DEFAULT_ROPE_FREQUENCY: f32 = 10_000.;

pub(crate) fn load(gguf: Gguf) -> Result<ModelWeights> {
    let md = |key: &str| metadata(gguf.ct, "llama", key);
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
    let rope = Rope::new(head_dim, rope_base, gguf.max_positions, true, gguf.device)?;

    let heads = Heads {
        n_head: head_count,
        n_kv_head: head_count_kv,
        head_dim,
    };
    let layers = (0..block_count)
        .map(|i| {
            Layer::read(
                gguf.tensor,
                i,
                rms_norm_eps,
                Activation::Silu,
                heads,
                rope.clone(),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    ModelWeights::read(
        gguf.tensor,
        gguf.device,
        rms_norm_eps,
        embedding_length,
        None,
        layers,
    )
}
