"""The capstone model: a small Llama-style decoder (RoPE, RMSNorm, SwiGLU, grouped K/V heads) with a KV cache.

Module 3 has the student write each piece; Modules 5.1 and 5.2 inline these reference pieces and train
the model on the induction task in a cell tagged ``training``. A decode loop with its own cache calls, per
block, ``block.attn_norm``, ``block.attn.qkv``, its own attention, ``block.attn.merge`` and the feed-forward.
"""

__all__ = [
    "nn",
    "CapstoneConfig",
    "CAPSTONE_MAX_BATCH",
    "CAPSTONE_MAX_ROWS",
    "_capstone_config",
    "_capstone_model",
    "_capstone_widths",
    "_capstone_features",
    "_rms_norm_args",
    "_accuracy_args",
    "_rms_norm_input",
    "_rope_inputs",
    "_heads_input",
    "_layer_cache",
    "_token_ids",
    "_capstone_tokens",
    "_layer_kv_args",
    "_kv_append_args",
    "_kv_cache_args",
    "_induction_sizes",
    "_induction_args",
    "_train_step_args",
    "_fit_args",
    "_generation_length",
    "_causal_attention_args",
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

from .validation import require_budget, require_finite_result, require_int, require_real, require_tensor

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
        per_layer = d_model * self.head_dim * 2 * (n_heads + n_kv_heads) + 3 * d_model * d_ff + 2 * d_model
        require_budget("the weights of a CapstoneLM of this config", (2 * vocab * d_model + n_layers * per_layer + d_model,), itemsize=4)

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


CAPSTONE_MAX_BATCH = 4096  # sequences in one induction batch: 64 times the lessons' batch of 64
CAPSTONE_MAX_ROWS = 12_800  # sequences one training call sees: the lessons' 200 steps of 64


def _capstone_config(config):
    """config when it is a CapstoneConfig, known by its class name (a notebook and the package each define one)."""
    if type(config).__name__ != "CapstoneConfig" or not all(hasattr(config, n) for n in CapstoneConfig.FIELDS):
        raise TypeError(f"config must be a CapstoneConfig, got {type(config).__name__}; build one with CapstoneConfig(...)")
    return config


def _capstone_model(model):
    """model when it is an nn.Module with a CapstoneConfig as its config (a CapstoneLM)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a CapstoneLM (an nn.Module with a CapstoneConfig .config), got {type(model).__name__}")
    _capstone_config(getattr(model, "config", None))
    return model


def _capstone_widths(what, shape, *, itemsize=4, **widths):
    """Each named width an int >= 1, and an array of ``shape`` (float32 unless told) within the allocation budget."""
    for name, value in widths.items():
        require_int(name, value, minimum=1)
    require_budget(what, shape, itemsize=itemsize)


def _capstone_features(x, width, dtype, *, ndim=None, squared=False):
    """x (..., width) of a layer's dtype; ``squared``: small enough that a product of two projections of x stays finite."""
    import torch

    x = require_tensor("x", x, ndim=ndim, min_ndim=1)
    if x.shape[-1] != width:
        raise ValueError(f"x must end in an axis of {width} features, got shape {tuple(x.shape)}")
    if x.dtype != dtype:
        raise TypeError(f"x has dtype {x.dtype} but the layer's weights have {dtype}; convert one (x.to(dtype) or layer.to(dtype))")
    largest, limit = (float(x.detach().abs().max()), torch.finfo(dtype).max ** 0.5 / width) if squared else (0.0, 1.0)
    if largest > limit:
        raise FloatingPointError(f"x reaches {largest:.3g}; a product of two projections of it overflows {dtype} "
                                 f"above about {limit:.3g}: scale x down")
    return x


def _rms_norm_args(d_model, eps):
    """eps (a real >= 0) as a float, after checking that RMSNorm's gain of d_model entries fits the budget."""
    _capstone_widths("RMSNorm's gain", (d_model,), d_model=d_model)
    return require_real("eps", eps, minimum=0.0)


def _accuracy_args(model, seed):
    """A CapstoneLM and a seed (an int from 0) for induction_accuracy."""
    _capstone_model(model)
    require_int("seed", seed, minimum=0, maximum=2**62)


def _rms_norm_input(x, weight, eps):
    """x (..., d) for RMSNorm; with eps = 0 a token of zeros has no scale (0 / 0), so it is refused."""
    x = _capstone_features(x, weight.shape[0], weight.dtype)
    if eps == 0 and bool((x == 0).all(-1).any()):
        raise ValueError("a token of x is all zeros and eps is 0: its root mean square is 0 (0 / 0); use eps > 0")
    return x


def _rope_inputs(x, positions, base):
    """Checked x (..., T, d) with an even d, integer positions (T,) on the CPU, and base > 1."""
    import torch

    x = require_tensor("x", x, min_ndim=2)
    if x.shape[-1] % 2:
        raise ValueError(f"RoPE turns pairs of coordinates: the last axis of x must be even, got {x.shape[-1]}")
    if (not isinstance(positions, torch.Tensor) or positions.shape != (x.shape[-2],) or positions.device.type != "cpu"
            or positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool):
        raise ValueError(f"positions must be an integer CPU tensor of shape ({x.shape[-2]},), one per token, got {positions!r}"[:200])
    require_real("base", base, minimum=1.0, strict_minimum=True)
    return x, positions


def _heads_input(out, n_heads, head_dim, dtype):
    """out (B, n_heads, T, head_dim) of the layer's dtype, for merge."""
    out = require_tensor("out", out, ndim=4)
    if (out.shape[1], out.shape[3]) != (n_heads, head_dim) or out.dtype != dtype:
        raise ValueError(f"out must have shape (B, {n_heads}, T, {head_dim}) and dtype {dtype}, got {tuple(out.shape)} {out.dtype}")
    return out


def _layer_cache(cache, whole=False):
    """cache when it is None or has what the model calls: append (a LayerKV) or, ``whole``, layers (a KVCache)."""
    if cache is not None and not hasattr(cache, "layers" if whole else "append"):
        raise TypeError(f"cache must be None or a {'KVCache' if whole else 'LayerKV'}, got {type(cache).__name__}")
    return cache


def _token_ids(name, tokens, vocab, most):
    """tokens (B, T) as a torch.long CPU tensor of ids below vocab, with B >= 1 and 1 <= T <= most."""
    import torch

    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long or tokens.dim() != 2 or tokens.device.type != "cpu":
        raise TypeError(f"{name} must be a torch.long CPU tensor of shape (batch, T), got {getattr(tokens, 'dtype', type(tokens).__name__)}")
    if not 1 <= tokens.shape[1] <= most or not tokens.shape[0] or bool(((tokens < 0) | (tokens >= vocab)).any()):
        raise ValueError(f"{name} must hold ids from 0 to {vocab - 1}, in 1 to {most} positions of at least one row; "
                         f"got shape {tuple(tokens.shape)}")
    return tokens


def _capstone_tokens(tokens, config, cache):
    """The first position of tokens (B, T): 0, or how many the cache holds; refuse ids and lengths that do not fit."""
    start = 0 if _layer_cache(cache, whole=True) is None else cache.length
    _token_ids("tokens", tokens, config.vocab, config.max_len - start)
    return start


def _layer_kv_args(batch, n_kv_heads, max_len, head_dim, dtype):
    """Sizes of a LayerKV (ints >= 1), a floating dtype, and buffers within the allocation budget."""
    import torch

    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype such as torch.float32, got {dtype!r}")
    _capstone_widths("the cache's keys and values", (2, batch, n_kv_heads, max_len, head_dim), itemsize=dtype.itemsize,
                     batch=batch, n_kv_heads=n_kv_heads, max_len=max_len, head_dim=head_dim)


def _kv_append_args(keys, k, v, start):
    """k and v (B, H_kv, T, hd) that fit buffers like ``keys`` (B, H_kv, max_len, hd), and an int start."""
    for name, t in (("k", k), ("v", v)):
        require_tensor(name, t, ndim=4)
        if (t.shape[0], t.shape[1], t.shape[3]) != (keys.shape[0], keys.shape[1], keys.shape[3]):
            raise ValueError(f"{name} must have shape ({keys.shape[0]}, {keys.shape[1]}, T, {keys.shape[3]}), as the cache; "
                             f"got {tuple(t.shape)}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    return require_int("start", start, minimum=0)


def _kv_cache_args(config, batch):
    """A CapstoneConfig and a batch size (int >= 1) whose cache fits the allocation budget."""
    _capstone_config(config)
    _capstone_widths("the cache of every layer", (2 * config.n_layers, batch, config.n_kv_heads, config.max_len, config.head_dim),
                     batch=batch)


def _induction_sizes(batch, vocab, k_min, k_max):
    """A batch of 1 to CAPSTONE_MAX_BATCH rows, and 2 <= k_min <= k_max <= vocab."""
    require_int("batch", batch, minimum=1, maximum=CAPSTONE_MAX_BATCH)
    require_int("vocab", vocab, minimum=2, maximum=1_000_000)
    require_int("k_min", k_min, minimum=2, maximum=vocab)
    require_int("k_max", k_max, minimum=k_min, maximum=vocab)
    require_budget("the random order of the vocabulary of each row", (batch, vocab), itemsize=12)


def _induction_args(batch, generator, vocab, k_min, k_max):
    """Checked arguments of induction_batch: a torch.Generator and the sizes of ``_induction_sizes``."""
    import torch

    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (torch.Generator().manual_seed(seed)), got {type(generator).__name__}")
    _induction_sizes(batch, vocab, k_min, k_max)


def _train_step_args(model, optimizer, inputs, targets, scored):
    """A module, a torch optimizer, token inputs and targets of one shape (ids its embedding knows), a bool scored with a True."""
    import torch

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    embedding = next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
    vocab = embedding.num_embeddings if embedding is not None else 2**62
    most = model.config.max_len if type(getattr(model, "config", None)).__name__ == "CapstoneConfig" else 2**62
    _token_ids("inputs", inputs, vocab, most)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim optimizer (torch.optim.AdamW(...)), got {type(optimizer).__name__}")
    if getattr(targets, "shape", None) != inputs.shape:
        raise ValueError(f"targets must have the shape of inputs, {tuple(inputs.shape)}, got {getattr(targets, 'shape', targets)!r}"[:200])
    _token_ids("targets", targets, vocab, most)
    if not isinstance(scored, torch.Tensor) or scored.dtype != torch.bool or scored.shape != inputs.shape or scored.device.type != "cpu":
        raise ValueError(f"scored must be a bool CPU tensor of the shape of inputs, {tuple(inputs.shape)}")
    if not bool(scored.any()):
        raise ValueError("scored has no True entry: the loss would be a mean over nothing (NaN); score at least one position")


def _fit_args(model, step, steps, seed, batch, lr, warmup, k_min, k_max, on_step):
    """Checked arguments of fit_induction: a CapstoneLM, callables, and steps, seed, rates and sizes in range."""
    config = _capstone_model(model).config
    for name, value in (("step", step), ("on_step", on_step)):
        if not callable(value) and not (name == "on_step" and value is None):
            raise TypeError(f"{name} must be a function, got {type(value).__name__}")
    require_int("steps", steps, minimum=1)
    require_int("seed", seed, minimum=0, maximum=2**62)
    require_real("lr", lr, minimum=0.0, strict_minimum=True, maximum=10.0)
    require_int("warmup", warmup, minimum=1)
    _induction_sizes(batch, config.vocab, k_min, k_max)
    if steps * batch > CAPSTONE_MAX_ROWS:
        raise ValueError(f"steps x batch = {steps * batch:,} sequences, over the {CAPSTONE_MAX_ROWS:,} one call trains on "
                         f"(CAPSTONE_MAX_ROWS: the lessons' 200 steps of 64); to train longer, call it again")
    if 2 * k_max - 1 > config.max_len:
        raise ValueError(f"the task's rows have 2 k_max - 1 = {2 * k_max - 1} tokens, more than max_len = {config.max_len}")


def _generation_length(model, prompt, n_new):
    """n_new checked against the room the model's context leaves after prompt (B, T0)."""
    _capstone_tokens(prompt, _capstone_model(model).config, None)
    return require_int("n_new", n_new, minimum=0, maximum=model.config.max_len - prompt.shape[1])


def _causal_attention_args(q, k, v, query_offset):
    """q (B, Hq, Tq, hd), k and v (B, Hkv, Tk, hd) of one dtype with Hkv dividing Hq; query_offset an int >= 0."""
    q, k, v = (require_tensor(name, t, ndim=4) for name, t in (("q", q), ("k", k), ("v", v)))
    if k.shape != v.shape or (q.shape[0], q.shape[3]) != (k.shape[0], k.shape[3]) or q.shape[1] % k.shape[1] \
            or not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"need q (B, Hq, Tq, hd) and k, v (B, Hkv, Tk, hd) of one dtype with Hkv dividing Hq; got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    require_int("query_offset", query_offset, minimum=0)
    require_budget("the attention scores and weights", (2, *q.shape[:3], k.shape[2]), itemsize=q.element_size())


def apply_rope(x, positions, base=10_000.0):
    """Rotate each pair (2i, 2i+1) of x [..., T, head_dim] by the angle position * base^(-2i/head_dim)."""
    import torch

    x, positions = _rope_inputs(x, positions, base)
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

        self.eps = _rms_norm_args(d_model, eps)
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        import torch

        x = _rms_norm_input(x, self.weight, self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    """The gated feed-forward network: w_down(silu(w_gate x) * w_up x)."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        _capstone_widths("SwiGLU's three weights", (3, d_model, d_ff), d_model=d_model, d_ff=d_ff)
        self.w_gate = nn.Linear(d_model, d_ff, bias=False)
        self.w_up = nn.Linear(d_model, d_ff, bias=False)
        self.w_down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        import torch.nn.functional as F

        x = _capstone_features(x, self.w_gate.in_features, self.w_gate.weight.dtype, squared=True)
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


def causal_attention(q, k, v, query_offset=0):
    """Softmax attention of q [B, Hq, Tq, hd] over k, v [B, Hkv, Tk, hd]; query r sits at query_offset + r.

    Each K/V head serves Hq / Hkv consecutive query heads. Returns (output [B, Hq, Tq, hd], weights [B, Hq, Tq, Tk]).
    """
    import math

    import torch

    _causal_attention_args(q, k, v, query_offset)
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)      # (B, Hq, Tk, hd)
    allowed = torch.arange(k.shape[2])[None, :] <= query_offset + torch.arange(q.shape[2])[:, None]  # (Tq, Tk)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])                      # (B, Hq, Tq, Tk)
    require_finite_result("the attention scores", scores, "q and k are too large for their dtype; scale them down")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return weights @ v, weights


class CapstoneAttention(nn.Module):
    """Causal self-attention with RoPE on queries and keys and n_kv_heads shared K/V heads."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.rope_base = config.rope_base
        self.w_q = nn.Linear(config.d_model, config.n_heads * config.head_dim, bias=False)
        self.w_k = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_v = nn.Linear(config.d_model, config.n_kv_heads * config.head_dim, bias=False)
        self.w_o = nn.Linear(config.n_heads * config.head_dim, config.d_model, bias=False)

    def qkv(self, x, positions):
        """x [B, T, d] at absolute positions [T] -> q [B, Hq, T, hd], k and v [B, Hkv, T, hd], RoPE on q and k."""
        x = _capstone_features(x, self.w_q.in_features, self.w_q.weight.dtype, ndim=3)
        B, T, _ = x.shape
        q = self.w_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)      # (B, Hq, T, hd)
        k = self.w_k(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)   # (B, Hkv, T, hd)
        v = self.w_v(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)   # (B, Hkv, T, hd)
        return apply_rope(q, positions, self.rope_base), apply_rope(k, positions, self.rope_base), v

    def merge(self, out):
        """out [B, Hq, T, hd] -> [B, T, d_model]: heads side by side, then w_o."""
        B, _, T, _ = _heads_input(out, self.n_heads, self.head_dim, self.w_o.weight.dtype).shape
        return self.w_o(out.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))

    def forward(self, x, positions, cache=None):
        """x [B, T, d] -> [B, T, d]; with a LayerKV cache, k and v are appended and the queries read all of it."""
        q, k, v = self.qkv(x, positions)
        offset = int(positions[0]) if _layer_cache(cache) is not None else 0
        if cache is not None:
            k, v = cache.append(k, v, offset)                                        # (B, Hkv, offset + T, hd)
        return self.merge(causal_attention(q, k, v, query_offset=offset)[0])


class CapstoneBlock(nn.Module):
    """A pre-norm decoder block: x + attn(attn_norm(x)), then x + ffn(ffn_norm(x))."""

    def __init__(self, config):
        super().__init__()
        _capstone_config(config)
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

        _layer_kv_args(batch, n_kv_heads, max_len, head_dim, dtype)
        self.keys = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.values = torch.zeros(batch, n_kv_heads, max_len, head_dim, dtype=dtype)
        self.length = 0

    def append(self, k, v, start):
        """Write k, v [B, Hkv, T, hd] at positions start.. and return every key and value so far (views)."""
        end = _kv_append_args(self.keys, k, v, start) + k.shape[2]
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
        _kv_cache_args(config, batch)
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
        self.config = _capstone_config(config)
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(CapstoneBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)

    def forward(self, tokens, cache=None):
        """tokens [B, T] -> logits [B, T, vocab]; with a KVCache the tokens continue what it holds."""
        import torch

        start = _capstone_tokens(tokens, self.config, cache)
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

    _induction_args(batch, generator, vocab, k_min, k_max)
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

    _train_step_args(model, optimizer, inputs, targets, scored)
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

    _fit_args(model, step, steps, seed, batch, lr, warmup, k_min, k_max, on_step)
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

    _capstone_config(config)
    if config.max_len < 2 * recipe.get("k_max", 12) - 1 or config.vocab < recipe.get("k_max", 12):
        raise ValueError(f"the induction task needs max_len >= 2 k_max - 1 and vocab >= k_max, got {config}")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = CapstoneLM(config)
    return model, fit_induction(model, train_step, steps, seed, on_step=on_step, **recipe)


def induction_accuracy(model, *, batch=512, seed=12345, k_min=4, k_max=12):
    """Held-out greedy accuracy on the scored positions of a fresh induction batch."""
    import torch

    _accuracy_args(model, seed)
    inputs, targets, scored = induction_batch(batch, torch.Generator().manual_seed(seed), vocab=model.config.vocab,
                                              k_min=k_min, k_max=k_max)
    with torch.no_grad():
        return float((model(inputs).argmax(-1) == targets)[scored].float().mean())


def attention_maps(model, tokens):
    """The attention weights of every layer on tokens [B, T]: a list of [B, Hq, T, T], one per block."""
    import torch

    _capstone_tokens(tokens, _capstone_model(model).config, None)
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

    n_new = _generation_length(model, prompt, n_new)
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
    """The same network as a ``transformers`` LlamaForCausalLM (tiny config, no download, model's dtype), weights copied in.

    Llama in ``transformers`` rotates the two halves of each head (i, i + hd/2), this model interleaved pairs
    (2i, 2i + 1): the rows of w_q and w_k are permuted per head, as Meta's conversion script does.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    c = _capstone_model(model).config
    llama = LlamaForCausalLM(LlamaConfig(
        vocab_size=c.vocab, hidden_size=c.d_model, intermediate_size=c.d_ff, num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads, num_key_value_heads=c.n_kv_heads, head_dim=c.head_dim,
        max_position_embeddings=c.max_len, rope_theta=c.rope_base, rms_norm_eps=c.norm_eps, hidden_act="silu",
        attention_bias=False, mlp_bias=False, tie_word_embeddings=False, attn_implementation="eager",
    )).to(model.embed.weight.dtype)

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
