//! The decoder-only transformer both embedded models are, over quantized GGUF weights: token
//! embeddings, blocks of (RMS norm → attention with RoPE and a KV cache → residual, RMS norm →
//! gated MLP → residual), a final norm and the output projection.
//!
//! An architecture is a set of choices made by its loader ([`crate::llama`], [`crate::gemma3`]):
//! how RoPE pairs dimensions, the MLP's activation, norms on queries and keys and after each
//! sub-block, a scale on the embeddings, and which layers attend to a sliding window only.
//! One implementation serves both, so a fix to attention or caching reaches every model.
//!
//! Written after candle-transformers 0.11.1 `quantized_llama` and `quantized_gemma3`
//! (MIT OR Apache-2.0, © the candle authors), which reprolab no longer depends on: dropping
//! that crate cut a clean test build from 302 s to 228 s on two cores.

use candle_core::quantized::{QMatMul, QTensor, gguf_file};
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor};
use candle_nn::Embedding;

/// RMS normalisation with a dequantized weight.
#[derive(Debug, Clone)]
pub(crate) struct RmsNorm {
    weight: Tensor,
    eps: f32,
}

impl RmsNorm {
    pub(crate) fn from_qtensor(weight: QTensor, eps: f32) -> Result<Self> {
        let weight = weight.dequantize(&weight.device())?;
        Ok(Self { weight, eps })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        candle_nn::ops::rms_norm(x, &self.weight, self.eps)
    }
}

/// The MLP's gate activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// Llama.
    Silu,
    /// Gemma (`gelu_pytorch_tanh`): GELU's tanh approximation.
    GeluTanh,
}

/// `down(act(gate(x)) * up(x))`.
#[derive(Debug, Clone)]
struct Mlp {
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
    activation: Activation,
}

impl Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let gate = self.gate.forward(xs)?;
        let gate = match self.activation {
            Activation::Silu => candle_nn::ops::silu(&gate)?,
            Activation::GeluTanh => gate.gelu()?,
        };
        self.down.forward(&(gate * self.up.forward(xs)?)?)
    }
}

/// Rotary position embedding: cos/sin tables for positions `0..max_positions`.
#[derive(Debug, Clone)]
pub(crate) struct Rope {
    sin: Tensor,
    cos: Tensor,
    /// Rotates adjacent pairs (2i, 2i+1), as llama's GGUF weights are permuted for; otherwise
    /// the halves (i, i + d/2), as Gemma's.
    interleaved: bool,
}

impl Rope {
    pub(crate) fn new(
        head_dim: usize,
        base: f32,
        max_positions: usize,
        interleaved: bool,
        device: &Device,
    ) -> Result<Self> {
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
            interleaved,
        })
    }

    /// `x` of shape (batch, heads, seq_len, head_dim), its first position at `index_pos`.
    fn apply(&self, x: &Tensor, index_pos: usize) -> Result<Tensor> {
        let (_b, _h, seq_len, _d) = x.dims4()?;
        let cos = self.cos.narrow(0, index_pos, seq_len)?;
        let sin = self.sin.narrow(0, index_pos, seq_len)?;
        let x = x.contiguous()?;
        if self.interleaved {
            candle_nn::rotary_emb::rope_i(&x, &cos, &sin)
        } else {
            candle_nn::rotary_emb::rope(&x, &cos, &sin)
        }
    }
}

/// One transformer block; the `Option`s are the architecture's choices.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    /// Norms of each head's queries and keys before RoPE (Gemma 3).
    pub(crate) qk_norm: Option<(RmsNorm, RmsNorm)>,
    attention_norm: RmsNorm,
    /// Norm of the attention's output before the residual (Gemma).
    pub(crate) post_attention_norm: Option<RmsNorm>,
    ffn_norm: RmsNorm,
    /// Norm of the MLP's output before the residual (Gemma).
    pub(crate) post_ffn_norm: Option<RmsNorm>,
    mlp: Mlp,
    heads: Heads,
    /// `Some(w)` for local layers, whose queries see only the last `w` keys.
    pub(crate) sliding_window: Option<usize>,
    rope: Rope,
    kv_cache: Option<(Tensor, Tensor)>,
}

/// Attention heads of a block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heads {
    pub(crate) n_head: usize,
    pub(crate) n_kv_head: usize,
    pub(crate) head_dim: usize,
}

/// How a loader reads the GGUF tensor named `name` (e.g. `blk.3.attn_q.weight`).
pub(crate) type ReadTensor<'a> = dyn FnMut(&str) -> Result<QTensor> + 'a;

impl Layer {
    /// Block `i`'s projections and its two pre-norms, as every architecture has them; the
    /// architecture-specific norms and window are left out for the loader to set.
    pub(crate) fn read(
        tensor: &mut ReadTensor,
        i: usize,
        rms_norm_eps: f32,
        activation: Activation,
        heads: Heads,
        rope: Rope,
    ) -> Result<Self> {
        let mut qmm = |s: &str| QMatMul::from_qtensor(tensor(&format!("blk.{i}.{s}.weight"))?);
        let (wq, wk, wv, wo) = (
            qmm("attn_q")?,
            qmm("attn_k")?,
            qmm("attn_v")?,
            qmm("attn_output")?,
        );
        let mlp = Mlp {
            gate: qmm("ffn_gate")?,
            up: qmm("ffn_up")?,
            down: qmm("ffn_down")?,
            activation,
        };
        let mut norm =
            |s: &str| RmsNorm::from_qtensor(tensor(&format!("blk.{i}.{s}.weight"))?, rms_norm_eps);
        Ok(Layer {
            wq,
            wk,
            wv,
            wo,
            qk_norm: None,
            attention_norm: norm("attn_norm")?,
            post_attention_norm: None,
            ffn_norm: norm("ffn_norm")?,
            post_ffn_norm: None,
            mlp,
            heads,
            sliding_window: None,
            rope,
            kv_cache: None,
        })
    }
}

/// Each of `n_kv_head` key/value heads repeated for the `n_rep` query heads sharing it.
fn repeat_kv(xs: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        return Ok(xs);
    }
    let (b_sz, n_kv_head, seq_len, head_dim) = xs.dims4()?;
    // Concatenating along the sequence and reshaping copies contiguously, which is faster
    // than a strided broadcast (candle PR #2043).
    Tensor::cat(&vec![&xs; n_rep], 2)?.reshape((b_sz, n_kv_head * n_rep, seq_len, head_dim))
}

/// 1 where query `index_pos + i` may see key `j`, else 0; shape (seq_len, index_pos + seq_len).
/// Causal, and within `window` when given (Hugging Face's rule: key j is visible from query i
/// when i − window < j ≤ i).
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
    /// `masks` holds the attention masks of this forward pass built so far, one per window.
    fn attention(
        &mut self,
        x: &Tensor,
        index_pos: usize,
        masks: &mut Vec<(Option<usize>, Tensor)>,
    ) -> Result<Tensor> {
        let (b_sz, seq_len, _) = x.dims3()?;
        let Heads {
            n_head,
            n_kv_head,
            head_dim,
        } = self.heads;
        let split = |t: Tensor, n: usize| -> Result<Tensor> {
            t.reshape((b_sz, seq_len, n, head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let mut q = split(self.wq.forward(x)?, n_head)?;
        let mut k = split(self.wk.forward(x)?, n_kv_head)?;
        let v = split(self.wv.forward(x)?, n_kv_head)?;
        if let Some((q_norm, k_norm)) = &self.qk_norm {
            q = q_norm.forward(&q)?;
            k = k_norm.forward(&k)?;
        }
        let q = self.rope.apply(&q, index_pos)?;
        let k = self.rope.apply(&k, index_pos)?;

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
        let scale = 1.0 / (head_dim as f64).sqrt();
        let k = repeat_kv(k, n_head / n_kv_head)?;
        let v = repeat_kv(v, n_head / n_kv_head)?;
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
            // Every layer with the same window shares one mask: built once per forward pass.
            let window = self.sliding_window;
            let mask = match masks.iter().find(|(w, _)| *w == window) {
                Some((_, mask)) => mask.clone(),
                None => {
                    let mask = attention_mask(seq_len, index_pos, window, x.device())?;
                    masks.push((window, mask.clone()));
                    mask
                }
            };
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
            .reshape((b_sz, seq_len, n_head * head_dim))?;
        self.wo.forward(&out)
    }

    fn forward(
        &mut self,
        h: &Tensor,
        index_pos: usize,
        masks: &mut Vec<(Option<usize>, Tensor)>,
    ) -> Result<Tensor> {
        let post = |norm: &Option<RmsNorm>, x: Tensor| match norm {
            Some(n) => n.forward(&x),
            None => Ok(x),
        };
        let a = self.attention(&self.attention_norm.forward(h)?, index_pos, masks)?;
        let h = (post(&self.post_attention_norm, a)? + h)?;
        let f = self.mlp.forward(&self.ffn_norm.forward(&h)?)?;
        post(&self.post_ffn_norm, f)? + h
    }
}

/// A model's weights and KV cache.
#[derive(Debug, Clone)]
pub struct ModelWeights {
    embeddings: Embedding,
    /// Multiplies the embeddings (Gemma: √hidden size).
    embedding_scale: Option<f64>,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: QMatMul,
}

impl ModelWeights {
    /// Loads a GGUF model by its `general.architecture` (llama or gemma3); RoPE tables cover
    /// positions `0..max_positions`, so a forward pass beyond that fails (the caller keeps
    /// within its context limit).
    pub fn from_gguf<R: std::io::Seek + std::io::Read>(
        ct: gguf_file::Content,
        reader: &mut R,
        device: &Device,
        max_positions: usize,
    ) -> Result<Self> {
        let arch = ct
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        let tensor = &mut |name: &str| ct.tensor(reader, name, device);
        let gguf = Gguf {
            ct: &ct,
            tensor,
            device,
            max_positions,
        };
        match arch.as_str() {
            "llama" => crate::llama::load(gguf),
            "gemma3" => crate::gemma3::load(gguf),
            other => candle_core::bail!(
                "architecture '{other}': expected llama (SmolLM2) or gemma3 (Gemma 3)"
            ),
        }
    }

    /// The model around `layers`: token embeddings (dequantized), the final norm, and the
    /// output projection, tied to the embeddings when the file has no `output.weight`.
    pub(crate) fn read(
        tensor: &mut ReadTensor,
        device: &Device,
        rms_norm_eps: f32,
        embedding_length: usize,
        embedding_scale: Option<f64>,
        layers: Vec<Layer>,
    ) -> Result<Self> {
        let embeddings_q = tensor("token_embd.weight")?;
        let embeddings = embeddings_q.dequantize(device)?;
        let norm = RmsNorm::from_qtensor(tensor("output_norm.weight")?, rms_norm_eps)?;
        let output = tensor("output.weight").unwrap_or(embeddings_q);
        Ok(Self {
            embeddings: Embedding::new(embeddings, embedding_length),
            embedding_scale,
            layers,
            norm,
            output: QMatMul::from_qtensor(output)?,
        })
    }

    /// Replaces every quantized matrix by its float32 dequantization: several times the memory
    /// and slower, but each product is then an exact float32 one, without the 8-bit rounding of
    /// activations whose kernel (and so whose rounding) candle picks by batch size. For
    /// checking the network against another implementation, or one path against another.
    pub fn dequantize(&mut self) -> Result<()> {
        let f32_weights = |m: &mut QMatMul| -> Result<()> {
            if let QMatMul::QTensor(t) = m {
                *m = QMatMul::Tensor(t.dequantize(&t.device())?);
            }
            Ok(())
        };
        f32_weights(&mut self.output)?;
        for l in &mut self.layers {
            for m in [&mut l.wq, &mut l.wk, &mut l.wv, &mut l.wo] {
                f32_weights(m)?;
            }
            for m in [&mut l.mlp.gate, &mut l.mlp.up, &mut l.mlp.down] {
                f32_weights(m)?;
            }
        }
        Ok(())
    }

    /// Logits of the last position of `x` (shape `(batch, seq_len)`), whose first token sits at
    /// `index_pos`; `index_pos == 0` starts a new sequence.
    pub fn forward(&mut self, x: &Tensor, index_pos: usize) -> Result<Tensor> {
        let (_b, seq_len) = x.dims2()?;
        let mut h = self.embeddings.forward(x)?;
        if let Some(scale) = self.embedding_scale {
            h = (h * scale)?;
        }
        let mut masks = Vec::new();
        for layer in self.layers.iter_mut() {
            h = layer.forward(&h, index_pos, &mut masks)?;
        }
        let last = h.i((.., seq_len - 1, ..))?;
        self.output.forward(&self.norm.forward(&last)?)
    }
}

/// What an architecture's loader reads from: the file's metadata and tensors, and the positions
/// its RoPE tables must cover.
pub(crate) struct Gguf<'a> {
    pub(crate) ct: &'a gguf_file::Content,
    pub(crate) tensor: &'a mut ReadTensor<'a>,
    pub(crate) device: &'a Device,
    pub(crate) max_positions: usize,
}

/// Reads `{prefix}.{key}` from a GGUF's metadata, naming the key when it is missing.
pub(crate) fn metadata<'a>(
    ct: &'a gguf_file::Content,
    prefix: &str,
    key: &str,
) -> Result<&'a gguf_file::Value> {
    let key = format!("{prefix}.{key}");
    ct.metadata
        .get(&key)
        .ok_or_else(|| candle_core::Error::Msg(format!("cannot find {key} in metadata")))
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

    #[test]
    fn repeated_kv_heads_follow_each_other() {
        // Two kv heads of one position, dim 1: [a, b] repeated twice is [a, a, b, b].
        let x = Tensor::new(&[1f32, 2.], &Device::Cpu)
            .unwrap()
            .reshape((1, 2, 1, 1))
            .unwrap();
        let r = repeat_kv(x, 2).unwrap().flatten_all().unwrap();
        assert_eq!(r.to_vec1::<f32>().unwrap(), vec![1., 1., 2., 2.]);
    }

    #[test]
    fn interleaved_rope_rotates_adjacent_pairs_and_halved_rope_the_halves() {
        // Position 1, one frequency pair per rotation: rotating (1, 0) by θ gives (cos θ, sin θ).
        let dev = Device::Cpu;
        let x = Tensor::new(&[1f32, 0., 0., 0.], &dev)
            .unwrap()
            .reshape((1, 1, 1, 4))
            .unwrap();
        let at = |interleaved| {
            let rope = Rope::new(4, 10_000., 2, interleaved, &dev).unwrap();
            let v = rope.apply(&x, 1).unwrap().flatten_all().unwrap();
            v.to_vec1::<f32>().unwrap()
        };
        let (c, s) = (1f32.cos(), 1f32.sin());
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
        // θ = 1 for the first frequency: adjacent pair (x0, x1), or halves (x0, x2).
        assert!(close(&at(true), &[c, s, 0., 0.]), "{:?}", at(true));
        assert!(close(&at(false), &[c, 0., s, 0.]), "{:?}", at(false));
    }
}
