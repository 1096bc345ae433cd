//! Gemma 3 forward pass over quantized GGUF weights.
//!
//! Adapted from candle-transformers 0.11.1 `models/quantized_gemma3.rs` (MIT OR Apache-2.0,
//! © the candle authors). Kept here, rather than used from candle, for three reasons measured
//! or found on Gemma-3-270M:
//! - candle builds RoPE tables for 131,072 positions in every one of the 18 layers: 2.4 GB of
//!   memory and ~25 s of a 29 s load on two cores. Here the two distinct tables (local and
//!   global base frequency) are built once, for the context this crate allows.
//! - candle applies the sliding window only while reading the prompt; when generating one token
//!   at a time every layer sees the whole cache. Here local layers see the last `window` keys
//!   in both phases (Hugging Face's rule: key j is visible from query i when i − window < j ≤ i).
//! - a prompt fed at a non-zero position built a mask of mixed dtypes (an error in candle);
//!   the mask here is built from absolute positions.

use candle_core::quantized::{QMatMul, QTensor, gguf_file};
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor};
use candle_nn::Embedding;
use candle_transformers::quantized_nn::RmsNorm;
use candle_transformers::utils::repeat_kv;

const DEFAULT_SLIDING_WINDOW_TYPE: usize = 6;
const DEFAULT_ROPE_FREQUENCY: f32 = 1_000_000.;
const DEFAULT_ROPE_FREQUENCY_SLIDING: f32 = 10_000.;

#[derive(Debug, Clone)]
struct Mlp {
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let gate = candle_nn::ops::silu(&self.gate.forward(xs)?)?;
        self.down.forward(&(gate * self.up.forward(xs)?)?)
    }
}

/// cos/sin tables for positions `0..max_positions`.
#[derive(Debug, Clone)]
struct RotaryEmbedding {
    sin: Tensor,
    cos: Tensor,
}

impl RotaryEmbedding {
    fn new(head_dim: usize, base: f32, max_positions: usize, device: &Device) -> Result<Self> {
        let theta: Vec<f32> = (0..head_dim)
            .step_by(2)
            .map(|i| 1f32 / base.powf(i as f32 / head_dim as f32))
            .collect();
        let theta = Tensor::new(theta.as_slice(), device)?;
        let idx_theta = Tensor::arange(0, max_positions as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((max_positions, 1))?
            .matmul(&theta.reshape((1, theta.elem_count()))?)?;
        Ok(Self {
            cos: idx_theta.cos()?,
            sin: idx_theta.sin()?,
        })
    }

    fn apply(&self, q: &Tensor, k: &Tensor, index_pos: usize) -> Result<(Tensor, Tensor)> {
        let (_b, _h, seq_len, _d) = q.dims4()?;
        let cos = self.cos.narrow(0, index_pos, seq_len)?;
        let sin = self.sin.narrow(0, index_pos, seq_len)?;
        Ok((
            candle_nn::rotary_emb::rope(&q.contiguous()?, &cos, &sin)?,
            candle_nn::rotary_emb::rope(&k.contiguous()?, &cos, &sin)?,
        ))
    }
}

#[derive(Debug, Clone)]
struct Layer {
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    q_norm: RmsNorm,
    k_norm: RmsNorm,
    attention_norm: RmsNorm,
    post_attention_norm: RmsNorm,
    ffn_norm: RmsNorm,
    post_ffn_norm: RmsNorm,
    mlp: Mlp,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    /// `Some(w)` for local (sliding-window) layers.
    sliding_window: Option<usize>,
    rotary: RotaryEmbedding,
    kv_cache: Option<(Tensor, Tensor)>,
}

/// 1 where query `index_pos + i` may see key `j`, else 0; shape (seq_len, index_pos + seq_len).
fn attention_mask(
    seq_len: usize,
    index_pos: usize,
    window: Option<usize>,
    device: &Device,
) -> Result<Tensor> {
    let kv_len = index_pos + seq_len;
    let mask: Vec<u8> = (0..seq_len)
        .flat_map(|i| {
            let q = index_pos + i;
            (0..kv_len).map(move |j| {
                let visible = j <= q && window.is_none_or(|w| q - j < w);
                u8::from(visible)
            })
        })
        .collect();
    Tensor::from_slice(&mask, (seq_len, kv_len), device)
}

impl Layer {
    fn attention(&mut self, x: &Tensor, index_pos: usize) -> Result<Tensor> {
        let (b_sz, seq_len, _) = x.dims3()?;
        let heads = |t: Tensor, n: usize| -> Result<Tensor> {
            t.reshape((b_sz, seq_len, n, self.head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = heads(self.wq.forward(x)?, self.n_head)?;
        let k = heads(self.wk.forward(x)?, self.n_kv_head)?;
        let v = heads(self.wv.forward(x)?, self.n_kv_head)?;
        let q = self.q_norm.forward(&q)?;
        let k = self.k_norm.forward(&k)?;
        let (q, k) = self.rotary.apply(&q, &k, index_pos)?;

        // Position 0 starts a new sequence: the old cache is dropped.
        let (k, v) = match &self.kv_cache {
            Some((k_cache, v_cache)) if index_pos > 0 => (
                Tensor::cat(&[k_cache, &k], 2)?,
                Tensor::cat(&[v_cache, &v], 2)?,
            ),
            _ => (k, v),
        };
        self.kv_cache = Some((k.clone(), v.clone()));

        let kv_len = k.dim(2)?;
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let k = repeat_kv(k, self.n_head / self.n_kv_head)?;
        let v = repeat_kv(v, self.n_head / self.n_kv_head)?;
        let (k, v, mask) = if seq_len == 1 {
            // One new token: it may see every cached key, or the last `window` of them.
            let visible = self.sliding_window.map_or(kv_len, |w| w.min(kv_len));
            let start = kv_len - visible;
            (
                k.narrow(2, start, visible)?,
                v.narrow(2, start, visible)?,
                None,
            )
        } else {
            let mask = attention_mask(seq_len, index_pos, self.sliding_window, x.device())?;
            (k, v, Some(mask))
        };
        let mut weights = (q.matmul(&k.contiguous()?.transpose(2, 3)?)? * scale)?;
        if let Some(mask) = mask {
            let mask = mask.broadcast_as(weights.shape())?;
            let neg_inf =
                Tensor::new(f32::NEG_INFINITY, x.device())?.broadcast_as(weights.dims())?;
            weights = mask.eq(0u8)?.where_cond(&neg_inf, &weights)?;
        }
        let weights = candle_nn::ops::softmax_last_dim(&weights)?;
        let out = weights.matmul(&v.contiguous()?)?;
        let out = out
            .transpose(1, 2)?
            .reshape((b_sz, seq_len, self.n_head * self.head_dim))?;
        self.wo.forward(&out)
    }
}

/// Gemma 3 weights and KV cache.
#[derive(Debug, Clone)]
pub struct ModelWeights {
    embeddings: Embedding,
    embedding_length: usize,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: QMatMul,
}

impl ModelWeights {
    /// Loads the weights; RoPE tables cover positions `0..max_positions`, so a forward pass
    /// beyond that fails (the caller keeps within its context limit).
    pub fn from_gguf<R: std::io::Seek + std::io::Read>(
        ct: gguf_file::Content,
        reader: &mut R,
        device: &Device,
        max_positions: usize,
    ) -> Result<Self> {
        let prefix = ["gemma3", "gemma2", "gemma", "gemma-embedding"]
            .into_iter()
            .find(|p| {
                ct.metadata
                    .contains_key(&format!("{p}.attention.head_count"))
            })
            .unwrap_or("gemma3");
        let md = |s: &str| {
            let key = format!("{prefix}.{s}");
            ct.metadata
                .get(&key)
                .ok_or_else(|| candle_core::Error::Msg(format!("cannot find {key} in metadata")))
        };
        let head_count = md("attention.head_count")?.to_u32()? as usize;
        let head_count_kv = md("attention.head_count_kv")?.to_u32()? as usize;
        let block_count = md("block_count")?.to_u32()? as usize;
        let embedding_length = md("embedding_length")?.to_u32()? as usize;
        let key_length = md("attention.key_length")?.to_u32()? as usize;
        let rms_norm_eps = md("attention.layer_norm_rms_epsilon")?.to_f32()? as f64;
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

        let rotary_global = RotaryEmbedding::new(key_length, rope_global, max_positions, device)?;
        let rotary_local = RotaryEmbedding::new(key_length, rope_local, max_positions, device)?;

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
            let q_norm = norm("attn_q_norm")?;
            let k_norm = norm("attn_k_norm")?;
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
                },
                q_norm,
                k_norm,
                attention_norm,
                post_attention_norm,
                ffn_norm,
                post_ffn_norm,
                n_head: head_count,
                n_kv_head: head_count_kv,
                head_dim: key_length,
                sliding_window: is_sliding.then_some(sliding_window_size),
                rotary: if is_sliding {
                    rotary_local.clone()
                } else {
                    rotary_global.clone()
                },
                kv_cache: None,
            });
        }
        Ok(Self {
            embeddings: Embedding::new(embeddings, embedding_length),
            embedding_length,
            layers,
            norm,
            output: QMatMul::from_qtensor(output)?,
        })
    }

    /// Logits of the last position of `x` (shape `(batch, seq_len)`), whose first token sits at
    /// `index_pos`; `index_pos == 0` starts a new sequence.
    pub fn forward(&mut self, x: &Tensor, index_pos: usize) -> Result<Tensor> {
        let (_b, seq_len) = x.dims2()?;
        let mut h = (self.embeddings.forward(x)? * (self.embedding_length as f64).sqrt())?;
        for layer in self.layers.iter_mut() {
            let a = layer.attention_norm.forward(&h)?;
            let a = layer.attention(&a, index_pos)?;
            let h1 = (layer.post_attention_norm.forward(&a)? + &h)?;
            let f = layer.mlp.forward(&layer.ffn_norm.forward(&h1)?)?;
            h = (layer.post_ffn_norm.forward(&f)? + h1)?;
        }
        let last = h.i((.., seq_len - 1, ..))?;
        self.output.forward(&self.norm.forward(&last)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(mask: &Tensor) -> Vec<Vec<u8>> {
        mask.to_vec2::<u8>().unwrap()
    }

    #[test]
    fn global_mask_is_causal() {
        let m = attention_mask(3, 0, None, &Device::Cpu).unwrap();
        assert_eq!(rows(&m), vec![vec![1, 0, 0], vec![1, 1, 0], vec![1, 1, 1]]);
    }

    #[test]
    fn local_mask_keeps_the_last_window_keys() {
        let m = attention_mask(4, 0, Some(2), &Device::Cpu).unwrap();
        assert_eq!(
            rows(&m),
            vec![
                vec![1, 0, 0, 0],
                vec![1, 1, 0, 0],
                vec![0, 1, 1, 0],
                vec![0, 0, 1, 1]
            ]
        );
    }

    #[test]
    fn mask_after_a_prefix_uses_absolute_positions() {
        // Queries at positions 3 and 4, keys 0..=4, window 3: query 3 sees 1..=3, query 4 sees 2..=4.
        let m = attention_mask(2, 3, Some(3), &Device::Cpu).unwrap();
        assert_eq!(rows(&m), vec![vec![0, 1, 1, 1, 0], vec![0, 0, 1, 1, 1]]);
    }
}
