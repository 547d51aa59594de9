"""The capstone model: a small Llama-style decoder (RoPE, RMSNorm, SwiGLU, grouped K/V heads) with a KV cache.

Module 3 has the student write each piece; Modules 5.1 and 5.2 inline these reference pieces and train
the model on the induction task in a cell tagged ``training``. A decode loop with its own cache calls, per
block, ``block.attn_norm``, ``block.attn.qkv``, its own attention, ``block.attn.merge`` and the feed-forward.
"""

__all__ = [
    "nn",
    "CapstoneConfig",
    "apply_rope",
    "RMSNorm",
    "SwiGLU",
    "causal_attention",
    "CapstoneAttention",
    "CapstoneBlock",
    "LayerKV",
    "KVCache",
    "CapstoneLM",
    "induction_batch",
    "train_step",
    "fit_induction",
    "train_capstone",
    "induction_accuracy",
    "attention_maps",
    "generate",
    "to_transformers_llama",
]

# torch.nn, which the classes below subclass (one line, so an inlined region needs no import of its own)
nn = __import__("torch.nn", fromlist=["Module"])


class CapstoneConfig:
    """The capstone model's sizes: vocabulary, width, layers, query and K/V heads, FFN width, context, RoPE base."""

    FIELDS = ("vocab", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "max_len", "rope_base", "norm_eps")

    def __init__(self, vocab=16, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=64, max_len=64,
                 rope_base=10_000.0, norm_eps=1e-5):
        for name, value in (("vocab", vocab), ("d_model", d_model), ("n_layers", n_layers), ("n_heads", n_heads),
                            ("n_kv_heads", n_kv_heads), ("d_ff", d_ff), ("max_len", max_len)):
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1_000_000:
                raise ValueError(f"{name} must be an int from 1 to 1,000,000, got {value!r}")
        if d_model % n_heads or n_heads % n_kv_heads or (d_model // n_heads) % 2:
            raise ValueError(f"need d_model divisible by n_heads, n_heads by n_kv_heads, and an even head_dim for RoPE's "
                             f"pairs; got d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}")
        if not (isinstance(rope_base, (int, float)) and rope_base > 1) or not (isinstance(norm_eps, (int, float)) and norm_eps > 0):
            raise ValueError(f"rope_base must be a number > 1 and norm_eps > 0, got {rope_base!r} and {norm_eps!r}")
        self.vocab, self.d_model, self.n_layers, self.n_heads, self.n_kv_heads = vocab, d_model, n_layers, n_heads, n_kv_heads
        self.d_ff, self.max_len, self.rope_base, self.norm_eps = d_ff, max_len, float(rope_base), float(norm_eps)

    @property
    def head_dim(self):
        """The width of one head: d_model / n_heads."""
        return self.d_model // self.n_heads

    def replace(self, **changes):
        """A copy with some fields changed (and checked again)."""
        return CapstoneConfig(**{**{name: getattr(self, name) for name in self.FIELDS}, **changes})

    def __eq__(self, other):
        return isinstance(other, CapstoneConfig) and all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    def __repr__(self):
        return "CapstoneConfig(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS) + ")"


def apply_rope(x, positions, base=10_000.0):
    """Rotate each pair (2i, 2i+1) of x [..., T, head_dim] by the angle position * base^(-2i/head_dim)."""
    import torch

    half = x.shape[-1] // 2
    frequency = base ** (-torch.arange(half, dtype=torch.float64) * 2 / x.shape[-1])   # (hd/2,)
    angle = positions.to(torch.float64)[:, None] * frequency                          # (T, hd/2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]                                            # (..., T, hd/2) each
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)   # (..., T, hd/2, 2)
    return rotated.flatten(-2)                                                        # (..., T, hd): pairs interleaved


class RMSNorm(nn.Module):
    """Root-mean-square norm over the last axis with a learned gain (no mean subtracted, no bias)."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        import torch

        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        import torch

        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    """The gated feed-forward network: w_down(silu(w_gate x) * w_up x)."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_gate = nn.Linear(d_model, d_ff, bias=False)
        self.w_up = nn.Linear(d_model, d_ff, bias=False)
        self.w_down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        import torch.nn.functional as F

        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


def causal_attention(q, k, v, query_offset=0):
    """Softmax attention of q [B, Hq, Tq, hd] over k, v [B, Hkv, Tk, hd]; query r sits at query_offset + r.

    Each K/V head serves Hq / Hkv consecutive query heads. Returns (output [B, Hq, Tq, hd], weights [B, Hq, Tq, Tk]).
    """
    import math

    import torch

    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)      # (B, Hq, Tk, hd)
    allowed = torch.arange(k.shape[2])[None, :] <= query_offset + torch.arange(q.shape[2])[:, None]  # (Tq, Tk)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])                      # (B, Hq, Tq, Tk)
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return weights @ v, weights


class CapstoneAttention(nn.Module):
    """Causal self-attention with RoPE on queries and keys and n_kv_heads shared K/V heads."""

    def __init__(self, config):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.rope_base = config.rope_base
        self.w_q = nn.Linear(config.d_model, config.n_heads * config.head_dim, bias=False)
        self.w_k = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_v = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_o = nn.Linear(config.n_heads * config.head_dim, config.d_model, bias=False)

    def qkv(self, x, positions):
        """x [B, T, d] at absolute positions [T] -> q [B, Hq, T, hd], k and v [B, Hkv, T, hd], RoPE on q and k."""
        B, T, _ = x.shape
        q = self.w_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)      # (B, Hq, T, hd)
        k = self.w_k(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)   # (B, Hkv, T, hd)
        v = self.w_v(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)   # (B, Hkv, T, hd)
        return apply_rope(q, positions, self.rope_base), apply_rope(k, positions, self.rope_base), v

    def merge(self, out):
        """out [B, Hq, T, hd] -> [B, T, d_model]: heads side by side, then w_o."""
        B, _, T, _ = out.shape
        return self.w_o(out.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))

    def forward(self, x, positions, cache=None):
        """x [B, T, d] -> [B, T, d]; with a LayerKV cache, k and v are appended and the queries read all of it."""
        q, k, v = self.qkv(x, positions)
        offset = int(positions[0]) if cache is not None else 0
        if cache is not None:
            k, v = cache.append(k, v, offset)                                        # (B, Hkv, offset + T, hd)
        return self.merge(causal_attention(q, k, v, query_offset=offset)[0])


class CapstoneBlock(nn.Module):
    """A pre-norm decoder block: x + attn(attn_norm(x)), then x + ffn(ffn_norm(x))."""

    def __init__(self, config):
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = CapstoneAttention(config)
        self.ffn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.ffn = SwiGLU(config.d_model, config.d_ff)

    def forward(self, x, positions, cache=None):
        x = x + self.attn(self.attn_norm(x), positions, cache)
        return x + self.ffn(self.ffn_norm(x))


class LayerKV:
    """One layer's keys and values in two preallocated contiguous buffers [B, Hkv, max_len, hd]."""

    def __init__(self, batch, n_kv_heads, max_len, head_dim, dtype):
        import torch

        self.keys = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.values = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.length = 0

    def append(self, k, v, start):
        """Write k, v [B, Hkv, T, hd] at positions start.. and return every key and value so far (views)."""
        end = start + k.shape[2]
        if start != self.length or end > self.keys.shape[2]:
            raise ValueError(f"the cache holds {self.length} of {self.keys.shape[2]} positions; cannot write positions "
                             f"{start}..{end - 1}: append in order and stay within max_len")
        self.keys[:, :, start:end], self.values[:, :, start:end] = k, v
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]


class KVCache:
    """The contiguous KV cache of a whole model: one LayerKV per layer, filled by CapstoneLM.forward."""

    def __init__(self, config, batch, dtype=None):
        import torch

        dtype = dtype or torch.get_default_dtype()
        self.layers = [LayerKV(batch, config.n_kv_heads, config.max_len, config.head_dim, dtype) for _ in range(config.n_layers)]

    @property
    def length(self):
        """How many positions the cache holds."""
        return self.layers[0].length

    def nbytes(self, used=True):
        """Bytes of the keys and values held (used=True) or allocated (used=False)."""
        return sum(
            (t[:, :, :layer.length] if used else t).numel() * t.element_size()
            for layer in self.layers for t in (layer.keys, layer.values)
        )


class CapstoneLM(nn.Module):
    """Token embedding, n_layers pre-norm blocks with RoPE attention, a final RMSNorm and an output head."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(CapstoneBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)

    def forward(self, tokens, cache=None):
        """tokens [B, T] -> logits [B, T, vocab]; with a KVCache the tokens continue what it holds."""
        import torch

        start = cache.length if cache is not None else 0
        if tokens.dim() != 2 or not 1 <= tokens.shape[1] <= self.config.max_len - start:
            raise ValueError(f"tokens must be [batch, T] with 1 <= T <= max_len - cached = {self.config.max_len - start}, "
                             f"got shape {tuple(tokens.shape)}")
        positions = torch.arange(start, start + tokens.shape[1])
        x = self.embed(tokens)                                                       # (B, T, d)
        for i, block in enumerate(self.blocks):
            x = block(x, positions, None if cache is None else cache.layers[i])
        return self.head(self.norm(x))                                               # (B, T, vocab)


def induction_batch(batch, generator, *, vocab=16, k_min=4, k_max=12):
    """Rows of k distinct random tokens repeated once (k drawn per row), padded with random tokens to 2 k_max.

    Returns (inputs [B, T], targets [B, T], scored [B, T]) with T = 2 k_max - 1, targets the next tokens, and
    scored True where the target is a repeated token the model can find earlier (the repeat's 2nd to k-th).
    """
    import torch

    if not 2 <= k_min <= k_max <= vocab:
        raise ValueError(f"need 2 <= k_min <= k_max <= vocab, got k_min={k_min}, k_max={k_max}, vocab={vocab}")
    segments = torch.rand(batch, vocab, generator=generator).argsort(-1)[:, :k_max]   # (B, k_max) distinct tokens
    k = torch.randint(k_min, k_max + 1, (batch, 1), generator=generator)              # (B, 1) segment lengths
    position = torch.arange(2 * k_max)[None, :]                                        # (1, 2 k_max)
    repeated = segments.gather(1, torch.where(position < k, position, position - k).clamp(max=k_max - 1))
    padding = torch.randint(vocab, (batch, 2 * k_max), generator=generator)
    sequences = torch.where(position < 2 * k, repeated, padding)                      # (B, 2 k_max)
    scored = (position[:, :-1] >= k) & (position[:, :-1] <= 2 * k - 2)                # targets k+1 .. 2k-1
    return sequences[:, :-1], sequences[:, 1:], scored


def train_step(model, optimizer, inputs, targets, scored):
    """One AdamW step on the mean next-token cross-entropy over the scored positions; return the loss."""
    import torch.nn.functional as F

    loss = F.cross_entropy(model(inputs)[scored], targets[scored])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def fit_induction(model, step, steps=200, seed=0, *, batch=64, lr=1e-2, warmup=20, k_min=4, k_max=12, on_step=None):
    """Train ``model`` on fresh induction batches with ``step(model, optimizer, inputs, targets, scored)``; return the losses.

    AdamW without weight decay; the rate rises linearly over ``warmup`` steps, then falls linearly to 0.
    """
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: min(1.0, (t + 1) / warmup) * (1 - t / steps))
    losses = []
    model.train()
    for t in range(steps):
        losses.append(step(model, optimizer, *induction_batch(batch, generator, vocab=model.config.vocab, k_min=k_min, k_max=k_max)))
        schedule.step()
        if on_step is not None:
            on_step(t + 1, losses[-1])
    model.eval()
    return losses


def train_capstone(config, steps=200, seed=0, *, on_step=None, **recipe):
    """A CapstoneLM seeded with ``seed`` and trained on the induction task (``recipe``: fit_induction's options)."""
    import torch

    if config.max_len < 2 * recipe.get("k_max", 12) - 1 or config.vocab < recipe.get("k_max", 12):
        raise ValueError(f"the induction task needs max_len >= 2 k_max - 1 and vocab >= k_max, got {config}")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = CapstoneLM(config)
    return model, fit_induction(model, train_step, steps, seed, on_step=on_step, **recipe)


def induction_accuracy(model, *, batch=512, seed=12345, k_min=4, k_max=12):
    """Held-out greedy accuracy on the scored positions of a fresh induction batch."""
    import torch

    inputs, targets, scored = induction_batch(batch, torch.Generator().manual_seed(seed), vocab=model.config.vocab,
                                              k_min=k_min, k_max=k_max)
    with torch.no_grad():
        return float((model(inputs).argmax(-1) == targets)[scored].float().mean())


def attention_maps(model, tokens):
    """The attention weights of every layer on tokens [B, T]: a list of [B, Hq, T, T], one per block."""
    import torch

    maps, positions = [], torch.arange(tokens.shape[1])
    with torch.no_grad():
        x = model.embed(tokens)
        for block in model.blocks:
            out, weights = causal_attention(*block.attn.qkv(block.attn_norm(x), positions))
            maps.append(weights)
            x = x + block.attn.merge(out)
            x = x + block.ffn(block.ffn_norm(x))
    return maps


def generate(model, prompt, n_new, *, cache=True):
    """Greedy decoding of n_new tokens after prompt [B, T0]; with cache=True each step feeds only the newest token."""
    import torch

    if not isinstance(n_new, int) or not 0 <= n_new <= model.config.max_len - prompt.shape[1]:
        raise ValueError(f"n_new must be an int from 0 to max_len - prompt length = {model.config.max_len - prompt.shape[1]}, got {n_new!r}")
    tokens, store = prompt, (KVCache(model.config, prompt.shape[0]) if cache else None)
    with torch.no_grad():
        feed = prompt
        for _ in range(n_new):
            logits = model(feed if cache else tokens, store)[:, -1]                 # (B, vocab) at the newest position
            newest = logits.argmax(-1, keepdim=True)                                  # (B, 1)
            tokens = torch.cat((tokens, newest), dim=1)
            feed = newest
    return tokens


def to_transformers_llama(model):
    """The same network as a ``transformers`` LlamaForCausalLM (tiny config, no download), weights copied in.

    Llama in ``transformers`` rotates the two halves of each head (i, i + hd/2), this model interleaved pairs
    (2i, 2i + 1): the rows of w_q and w_k are permuted per head, as Meta's conversion script does.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    c = model.config
    llama = LlamaForCausalLM(LlamaConfig(
        vocab_size=c.vocab, hidden_size=c.d_model, intermediate_size=c.d_ff, num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads, num_key_value_heads=c.n_kv_heads, head_dim=c.head_dim,
        max_position_embeddings=c.max_len, rope_theta=c.rope_base, rms_norm_eps=c.norm_eps, hidden_act="silu",
        attention_bias=False, mlp_bias=False, tie_word_embeddings=False, attn_implementation="eager",
    ))

    def halves(weight, heads):
        """Rows of each head from pairs (x0, x1), (x2, x3), ... to halves (x0, x2, ...; x1, x3, ...)."""
        return weight.view(heads, c.head_dim // 2, 2, -1).transpose(1, 2).reshape(weight.shape)

    state = {"model.embed_tokens.weight": model.embed.weight, "model.norm.weight": model.norm.weight,
             "lm_head.weight": model.head.weight}
    for i, block in enumerate(model.blocks):
        at = f"model.layers.{i}."
        state |= {
            at + "input_layernorm.weight": block.attn_norm.weight,
            at + "self_attn.q_proj.weight": halves(block.attn.w_q.weight, c.n_heads),
            at + "self_attn.k_proj.weight": halves(block.attn.w_k.weight, c.n_kv_heads),
            at + "self_attn.v_proj.weight": block.attn.w_v.weight,
            at + "self_attn.o_proj.weight": block.attn.w_o.weight,
            at + "post_attention_layernorm.weight": block.ffn_norm.weight,
            at + "mlp.gate_proj.weight": block.ffn.w_gate.weight,
            at + "mlp.up_proj.weight": block.ffn.w_up.weight,
            at + "mlp.down_proj.weight": block.ffn.w_down.weight,
        }
    with torch.no_grad():
        missing, unexpected = llama.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=False)
    if unexpected or [name for name in missing if "rotary" not in name]:
        raise ValueError(f"the weight names do not match this transformers version: missing {missing}, unexpected {unexpected}")
    return llama.eval()
