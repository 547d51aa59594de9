"""Module 3's contracts for the capstone exercises: RoPE, RMSNorm, SwiGLU, the attention, the model, the step, the cache.

Each check recomputes what it expects in its own way (complex numbers for RoPE, ``torch.nn.functional`` for the
rest), from the student's own weights, and never from builder/contracts/capstone.py, whose classes the exercises
rebuild under the same names. ``CapstoneConfig`` is the one piece they share (inlined before them).
"""

from .calls import contract_call
from .capstone import CapstoneConfig, _capstone_model, _capstone_tokens, _rope_inputs
from .violations import ContractViolation, contract_assert, contract_close

__all__ = [
    "rope_by_complex",
    "capstone_by_hand",
    "check_rope_contract",
    "check_rms_norm_contract",
    "check_swiglu_contract",
    "check_capstone_attention_contract",
    "check_capstone_model_contract",
    "check_induction_batch_contract",
    "check_train_step_contract",
    "check_fit_induction_contract",
    "check_induction_accuracy_contract",
    "check_kv_generation_contract",
    "_check_layer_kv_refusals",
]

def rope_by_complex(x, positions, base=10_000.0, *, halves=False, sign=1.0, exponent=2.0):
    """RoPE as complex multiplication: pair i of x [..., T, d] times exp(i p base^(-exponent i / d)), in float64.

    ``halves`` pairs coordinate i with i + d/2 (the layout of `transformers`' Llama) instead of 2i with 2i + 1;
    ``sign`` = -1 turns the other way; ``exponent`` = 1 is the per-pair exponent mistake.
    """
    import torch

    x, positions = _rope_inputs(x, positions, base)
    if sign not in (1.0, -1.0) or exponent not in (1.0, 2.0) or not isinstance(halves, bool):
        raise ValueError(f"sign must be 1 or -1, exponent 1 or 2 and halves a bool, got {sign!r}, {exponent!r}, {halves!r}")
    d = x.shape[-1]
    x = x.double()
    pairs = torch.stack((x[..., : d // 2], x[..., d // 2:]), -1) if halves else x.unflatten(-1, (d // 2, 2))  # (..., T, d/2, 2)
    angle = sign * positions.double()[:, None] * base ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)
    turned = torch.view_as_real(torch.view_as_complex(pairs.contiguous()) * torch.polar(torch.ones_like(angle), angle))
    return torch.cat((turned[..., 0], turned[..., 1]), -1) if halves else turned.flatten(-2)


def capstone_by_hand(model, tokens, *, pre_norm=True, final_norm=True):
    """The logits a Llama-style model must give, from its own state dict, with torch.nn.functional (float64)."""
    import torch
    import torch.nn.functional as F

    _capstone_tokens(tokens, _capstone_model(model).config, None)
    c, w = model.config, {name: t.detach().double() for name, t in model.state_dict().items()}
    B, T = tokens.shape
    positions = torch.arange(T)
    x = w["embed.weight"][tokens]                                                   # (B, T, d)

    def norm(h, name):
        return F.rms_norm(h, (c.d_model,), w[name], eps=c.norm_eps)

    for i in range(c.n_layers):
        at = f"blocks.{i}."
        h = norm(x, at + "attn_norm.weight") if pre_norm else x
        heads = [(h @ w[at + f"attn.w_{n}.weight"].T).view(B, T, -1, c.head_dim).transpose(1, 2) for n in "qkv"]
        q, k = (rope_by_complex(t, positions, c.rope_base) for t in heads[:2])      # (B, H, T, hd)
        group = c.n_heads // c.n_kv_heads
        out = F.scaled_dot_product_attention(q, k.repeat_interleave(group, 1), heads[2].repeat_interleave(group, 1), is_causal=True)
        x = x + out.transpose(1, 2).reshape(B, T, -1) @ w[at + "attn.w_o.weight"].T
        x = norm(x, at + "attn_norm.weight") if not pre_norm else x
        h = norm(x, at + "ffn_norm.weight") if pre_norm else x
        ffn = (F.silu(h @ w[at + "ffn.w_gate.weight"].T) * (h @ w[at + "ffn.w_up.weight"].T)) @ w[at + "ffn.w_down.weight"].T
        x = x + ffn if pre_norm else norm(x + ffn, at + "ffn_norm.weight")
    return (norm(x, "norm.weight") if final_norm else x) @ w["head.weight"].T      # (B, T, vocab)


def check_rope_contract(apply_rope):
    """Judge ``apply_rope(x, positions, base=10000.0)``: pair (2i, 2i+1) of the token at position p turned by p base^(-2i/d).

    Returns the largest error; raises ContractViolation naming the first property that fails and the usual mistake.
    """
    import torch
    raised = "the function raised on a valid input; the traceback above this message shows where"

    gen = torch.Generator().manual_seed(909)
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64, generator=gen)
    positions = torch.tensor([0, 1, 4, 9, 30])
    case = "x of shape (2, 3, 5, 8) float64, positions (0, 1, 4, 9, 30)"

    def judge(prop, x, positions, base, case):
        out = contract_call(prop, case, raised, apply_rope, x, positions, base)
        contract_assert(
            isinstance(out, torch.Tensor) and out.shape == x.shape and out.dtype == x.dtype, prop, case,
            f"a {x.dtype} tensor of shape {tuple(x.shape)}", f"{type(out).__name__} {tuple(getattr(out, 'shape', ()))} {getattr(out, 'dtype', '')}",
            "RoPE turns each pair in place: keep the shape and the dtype of x",
        )
        want = rope_by_complex(x, positions, base)
        if torch.allclose(out, want, atol=1e-10, rtol=0):
            return float((out - want).abs().max())
        hint = "pair i = (x[..., 2i], x[..., 2i+1]) turns by positions[t] * base**(-2i/d): (a cos - b sin, a sin + b cos)"
        for variant, why in (
            (dict(halves=True), "you paired coordinate i with i + d/2 (the halves layout of transformers' Llama); this course "
                                "rotates neighbours (2i, 2i+1), as the RoFormer paper does"),
            (dict(sign=-1.0), "the pairs turn the wrong way: (a, b) -> (a cos + b sin, -a sin + b cos) is a rotation by minus the angle"),
            (dict(exponent=1.0), "the frequency of pair i is base**(-2i/d): the exponent counts coordinates (2i), not pairs (i)"),
        ):
            if torch.allclose(out, rope_by_complex(x, positions, base, **variant), atol=1e-10, rtol=0):
                hint = why
        if torch.allclose(out, rope_by_complex(x, torch.arange(len(positions)), base), atol=1e-10, rtol=0):
            hint = "the positions argument was ignored (rows were numbered 0, 1, 2, ...): a cached token keeps its absolute position"
        return contract_close(prop, case, out, want, hint, atol=1e-10, rtol=0)

    error = judge("pair (2i, 2i+1) at position p turns by p * base^(-2i/d)", x, positions, 10_000.0, case)
    error = max(error, judge("the base argument sets the rotation frequencies", x, positions, 50.0, case + ", base=50"))
    out = contract_call("position 0 leaves the vector unchanged", "x of shape (1, 8) at position 0", raised, apply_rope, x[0, 0, :1], torch.tensor([0]))
    contract_close("position 0 leaves the vector unchanged", "x of shape (1, 8) at position 0", out, x[0, 0, :1],
                   "an angle of 0 is no rotation: cos 0 = 1 and sin 0 = 0", atol=1e-12, rtol=0)
    q, k = x[0, 0, 0], x[0, 1, 0]
    scores = [float(apply_rope(q[None], torch.tensor([m + 3]))[0] @ apply_rope(k[None], torch.tensor([m]))[0]) for m in (0, 5, 40)]
    contract_assert(
        max(scores) - min(scores) < 1e-9, "q . k depends only on the offset between their positions", "q at m + 3, k at m, m = 0, 5, 40",
        "one score for every m", f"scores {[round(s, 6) for s in scores]}", "rotate queries and keys with the same rule; a rotation keeps only the offset",
    )
    return {"max_error": error, "offset_only": "PASS"}


def check_rms_norm_contract(RMSNorm):
    """Judge ``RMSNorm(d_model, eps=1e-5)``: a module with a gain ``weight`` (ones) giving x / sqrt(mean(x^2) + eps) * weight."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    prop, case = "RMSNorm(5) has a gain weight of 5 ones", "RMSNorm(5)"
    norm = contract_call(prop, case, raised, RMSNorm, 5)
    weight = getattr(norm, "weight", None)
    contract_assert(
        isinstance(weight, torch.nn.Parameter) and weight.shape == (5,) and bool((weight == 1).all()), prop, case,
        "an nn.Parameter of shape (5,) filled with 1", f"{type(weight).__name__} {tuple(getattr(weight, 'shape', ()))}",
        "self.weight = nn.Parameter(torch.ones(d_model)): a learned gain that starts as the identity",
    )
    gen = torch.Generator().manual_seed(17)
    x = torch.randn(3, 5, dtype=torch.float64, generator=gen) * 3 + torch.tensor([[4.0], [-1.0], [0.5]], dtype=torch.float64)
    gain = torch.tensor([1.0, 2.0, -1.0, 0.5, 3.0], dtype=torch.float64)
    norm = contract_call(prop, "RMSNorm(5, eps=0.5)", raised, RMSNorm, 5, 0.5).double()
    with torch.no_grad():
        norm.weight.copy_(gain)
    case = "x (3, 5) float64 with row means 4, -1, 0.5, eps=0.5, weight (1, 2, -1, 0.5, 3)"
    out = contract_call("output is x / sqrt(mean(x^2) + eps) * weight", case, raised, norm, x)
    want = F.rms_norm(x, (5,), gain, eps=0.5)
    hint = "divide each token by the root of its mean square plus eps over the last axis, then multiply by weight"
    if isinstance(out, torch.Tensor) and out.shape == x.shape:
        centred = x - x.mean(-1, keepdim=True)
        mistakes = (
            (F.rms_norm(centred, (5,), gain, eps=0.5), "the mean was subtracted: that is LayerNorm; RMSNorm keeps the mean and only rescales"),
            (x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 0.5) * gain, "eps goes inside the square root: sqrt(mean(x^2) + eps)"),
            (F.rms_norm(x, (5,), None, eps=0.5), "the gain self.weight was not applied"),
            (x / (x.pow(2).sum(-1, keepdim=True) + 0.5).sqrt() * gain, "mean of the squares, not their sum: divide by d"),
        )
        hint = next((why for value, why in mistakes if torch.allclose(out.detach(), value, atol=1e-9)), hint)
    error = contract_close("output is x / sqrt(mean(x^2) + eps) * weight", case, out, want, hint, atol=1e-9, rtol=1e-9)
    contract_assert(out.requires_grad, "the gain receives gradients", case, "an output that requires grad", "an output cut off from autograd",
                    "no .detach(), .item() or NumPy round trip inside forward")
    return {"max_error": error}


def check_swiglu_contract(SwiGLU):
    """Judge ``SwiGLU(d_model, d_ff)``: bias-free ``w_gate``, ``w_up`` (d -> d_ff) and ``w_down`` (d_ff -> d), w_down(silu(w_gate x) * w_up x)."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    prop, case = "three bias-free projections w_gate, w_up: 6 -> 10 and w_down: 10 -> 6", "SwiGLU(6, 10)"
    torch.manual_seed(5)
    ffn = contract_call(prop, case, raised, SwiGLU, 6, 10)
    layers = [getattr(ffn, name, None) for name in ("w_gate", "w_up", "w_down")]
    shapes = [tuple(layer.weight.shape) if isinstance(layer, torch.nn.Linear) else None for layer in layers]
    contract_assert(
        shapes == [(10, 6), (10, 6), (6, 10)] and all(layer.bias is None for layer in layers), prop, case,
        "weights (10, 6), (10, 6), (6, 10), no biases", f"weights {shapes}, biases {[getattr(l, 'bias', None) is not None for l in layers]}",
        "nn.Linear(d_model, d_ff, bias=False) for w_gate and w_up, nn.Linear(d_ff, d_model, bias=False) for w_down",
    )
    x = torch.randn(2, 3, 6, generator=torch.Generator().manual_seed(8))
    prop = "output is w_down(silu(w_gate x) * w_up x)"
    out = contract_call(prop, "x (2, 3, 6)", raised, ffn, x)
    gate, up = ffn.w_gate(x), ffn.w_up(x)
    hint = "gate = silu(w_gate x) (silu(z) = z sigmoid(z)), multiply by w_up x entry by entry, then w_down"
    if isinstance(out, torch.Tensor) and out.shape == x.shape:
        mistakes = (
            (ffn.w_down(F.silu(up) * gate), "silu went on the w_up branch: the gate is silu(w_gate x), w_up x stays linear"),
            (ffn.w_down(F.gelu(gate) * up), "GELU is GPT-2's activation; SwiGLU gates with SiLU (Swish): z * sigmoid(z)"),
            (ffn.w_down(torch.sigmoid(gate) * up), "sigmoid alone is the GLU gate; SwiGLU uses silu(z) = z * sigmoid(z)"),
            (ffn.w_down(F.silu(gate)), "the w_up branch is missing: the gate multiplies w_up x"),
        )
        hint = next((why for value, why in mistakes if torch.allclose(out.detach(), value.detach(), atol=1e-6)), hint)
    error = contract_close(prop, "x (2, 3, 6)", out, ffn.w_down(F.silu(gate) * up), hint, atol=1e-6, rtol=1e-6)
    return {"max_error": error}


def check_capstone_attention_contract(CapstoneAttention):
    """Judge ``CapstoneAttention(config)``: RoPE attention with grouped K/V heads, its ``qkv``, ``merge`` and a cached ``forward``."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    config = CapstoneConfig(vocab=11, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=8, max_len=12, rope_base=100.0)
    case = "CapstoneAttention(config): d_model 16, 4 query heads, 2 K/V heads, head_dim 4, rope_base 100"
    torch.manual_seed(6)
    prop = "w_q, w_o: 16 -> 16 and w_k, w_v: 16 -> 8, no biases"
    attn = contract_call(prop, case, raised, CapstoneAttention, config)
    layers = [getattr(attn, f"w_{n}", None) for n in "qkvo"]
    shapes = [tuple(layer.weight.shape) if isinstance(layer, torch.nn.Linear) else None for layer in layers]
    contract_assert(
        shapes == [(16, 16), (8, 16), (8, 16), (16, 16)] and all(layer.bias is None for layer in layers), prop, case,
        "weights (16, 16), (8, 16), (8, 16), (16, 16)", f"{shapes}", "K and V have n_kv_heads * head_dim outputs; use bias=False",
    )
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(7))
    positions = torch.arange(7)
    with torch.no_grad():
        heads = [(x @ layer.weight.T).view(2, 7, -1, 4).transpose(1, 2) for layer in layers[:3]]
        q, k = (rope_by_complex(t, positions, 100.0).float() for t in heads[:2])
        v = heads[2]
        prop = "qkv gives q (B, 4, T, 4) and k, v (B, 2, T, 4), RoPE on q and k only"
        got = contract_call(prop, "x (2, 7, 16)" , raised, attn.qkv, x, positions)
        for name, value, want in zip("qkv", got, (q, k, v)):
            hint = ("head h of token t holds features h*head_dim .. (h+1)*head_dim - 1 of the projection (split_heads), "
                    "with apply_rope(q or k, positions, rope_base); v is not rotated")
            if name == "v" and torch.allclose(value, rope_by_complex(v, positions, 100.0).float(), atol=1e-5):
                hint = "v was rotated: RoPE turns queries and keys, whose dot product carries the position; the values stay as they are"
            if name == "k" and torch.allclose(value, heads[1], atol=1e-5):
                hint = "k was not rotated: both q and k turn, so that their dot product depends on the offset"
            contract_close(f"{prop}: {name}", "x (2, 7, 16)", value, want, hint, atol=1e-5, rtol=1e-5)
        out = torch.randn(2, 4, 7, 4)
        contract_close("merge puts the heads side by side, then applies w_o", "out (2, 4, 7, 4)", contract_call(
            "merge puts the heads side by side, then applies w_o", "out (2, 4, 7, 4)", raised, attn.merge, out),
            out.transpose(1, 2).reshape(2, 7, 16) @ layers[3].weight.T, "merge_heads(out), then self.w_o", atol=1e-5, rtol=1e-5)
        want = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), is_causal=True)
        want = want.transpose(1, 2).reshape(2, 7, 16) @ layers[3].weight.T
        prop = "forward is causal RoPE attention, query head h reading K/V head h // 2"
        result = contract_call(prop, "x (2, 7, 16), positions 0..6, no cache", raised, attn, x, positions)
        hint = "q, k, v = self.qkv(...); repeat each K/V head for its group (repeat_kv_heads), mask with causal_allowed, attend, merge"
        tiled = F.scaled_dot_product_attention(q, k.repeat(1, 2, 1, 1), v.repeat(1, 2, 1, 1), is_causal=True)
        if isinstance(result, torch.Tensor) and torch.allclose(result, tiled.transpose(1, 2).reshape(2, 7, 16) @ layers[3].weight.T, atol=1e-5):
            hint = "the K/V heads were tiled (kv0, kv1, kv0, kv1): consecutive query heads share one K/V head, so repeat_interleave"
        error = contract_close(prop, "x (2, 7, 16), positions 0..6, no cache", result, want, hint, atol=1e-5, rtol=1e-5)

        class Recorder:
            """A cache for one layer: keeps every key and value appended, in order."""

            def __init__(self):
                self.keys = self.values = None
                self.length = 0

            def append(self, k, v, start):
                if start != self.length:
                    raise ContractViolation(
                        "cached calls append at their own first position", "x split 4 + 3 tokens, positions 0..3 then 4..6",
                        f"start={self.length}", f"start={start}", "pass int(positions[0]) as the start of the appended keys",
                    )
                self.keys = k if self.keys is None else torch.cat((self.keys, k), 2)
                self.values = v if self.values is None else torch.cat((self.values, v), 2)
                self.length += k.shape[2]
                return self.keys, self.values

        prop, cached = "with a cache, later queries read every cached key at their absolute positions", "x split 4 + 3 tokens, positions 0..3 then 4..6"
        cache = Recorder()
        parts = [contract_call(prop, cached, raised, attn, x[:, s], positions[s], cache) for s in (slice(0, 4), slice(4, 7))]
        hint = "append (k, v) to the cache, attend over all it returns, and mask with causal_allowed(T, T_k, query_offset=T_k - T)"
        if isinstance(parts[1], torch.Tensor) and parts[1].shape == (2, 3, 16):
            q_late = q[:, :, 4:]
            top_left = torch.ones(3, 7, dtype=torch.bool).tril()
            wrong = F.scaled_dot_product_attention(q_late, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=top_left)
            if torch.allclose(parts[1], wrong.transpose(1, 2).reshape(2, 3, 16) @ layers[3].weight.T, atol=1e-5):
                hint = ("the mask of the cached queries is top-left aligned (is_causal=True's rule): query r sits at position "
                        "query_offset + r, so pass query_offset=T_k - T_q to causal_allowed")
        contract_close(prop, cached, torch.cat(parts, 1), want, hint, atol=1e-5, rtol=1e-5)
    return {"max_error": error, "cache": "PASS"}


def check_capstone_model_contract(CapstoneLM):
    """Judge ``CapstoneLM(config)`` (and the ``CapstoneBlock`` it stacks): its parts by name, its logits, causality, the cache."""
    import torch
    raised = "the function raised on a valid input; the traceback above this message shows where"

    config = CapstoneConfig(vocab=11, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=24, max_len=12, rope_base=100.0)
    case = "CapstoneLM(config): vocab 11, d_model 16, 2 layers, 4 query heads, 2 K/V heads, d_ff 24"
    torch.manual_seed(10)
    prop = "the model holds embed, blocks.i.{attn_norm, attn, ffn_norm, ffn}, norm and head"
    model = contract_call(prop, case, raised, CapstoneLM, config)
    names = {name for name in getattr(model, "state_dict", dict)()}
    want_names = {"embed.weight", "norm.weight", "head.weight"} | {
        f"blocks.{i}.{part}.weight" for i in range(2) for part in (
            "attn_norm", "attn.w_q", "attn.w_k", "attn.w_v", "attn.w_o", "ffn_norm", "ffn.w_gate", "ffn.w_up", "ffn.w_down")}
    contract_assert(names == want_names, prop, case, "these weights and no others", f"missing {sorted(want_names - names)[:4]}, "
                    f"extra {sorted(names - want_names)[:4]}", "nn.Embedding, an nn.ModuleList of CapstoneBlock, RMSNorm and a bias-free nn.Linear head")
    with torch.no_grad():  # weights that are not at their initial values, so a skipped norm gain shows
        for name, tensor in model.state_dict().items():
            if name.endswith("norm.weight"):
                tensor.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(len(name)))
    tokens = torch.tensor([[1, 5, 2, 7, 1, 5, 9, 0], [3, 3, 10, 4, 8, 6, 2, 1]])
    prop, tcase = "logits = head(norm(blocks(embed(tokens)))) with pre-norm residual blocks", "tokens (2, 8)"
    with torch.no_grad():
        logits = contract_call(prop, tcase, raised, model, tokens)
        hint = "x = x + attn(attn_norm(x), positions, cache), then x = x + ffn(ffn_norm(x)); after the blocks, norm, then head"
        if isinstance(logits, torch.Tensor) and logits.shape == (2, 8, 11):
            for variant, why in ((dict(pre_norm=False), "post-norm: normalise each sublayer's input, not the residual sum"),
                                 (dict(final_norm=False), "the final norm is missing: head(norm(x))")):
                if torch.allclose(logits.double(), capstone_by_hand(model, tokens, **variant), atol=1e-4):
                    hint = why
        error = contract_close(prop, tcase, logits, capstone_by_hand(model, tokens), hint, atol=1e-4, rtol=1e-4)

        class Recorder:
            """A cache of one layer that keeps what is appended."""

            def __init__(self):
                self.keys = self.values = None
                self.length = 0

            def append(self, k, v, start):
                self.keys = k if self.keys is None else torch.cat((self.keys, k), 2)
                self.values = v if self.values is None else torch.cat((self.values, v), 2)
                self.length += k.shape[2]
                return self.keys, self.values

        class Cache:
            """A whole model's cache: one Recorder per layer."""

            def __init__(self):
                self.layers = [Recorder() for _ in range(2)]

            @property
            def length(self):
                return self.layers[0].length

        prop, ccase = "fed 5 tokens, then 1 at a time through a cache, the logits are those of one full pass", "tokens (2, 8) as 5 + 1 + 1 + 1"
        cache = Cache()
        steps = [contract_call(prop, ccase, raised, model, tokens[:, s], cache) for s in (slice(0, 5), slice(5, 6), slice(6, 7), slice(7, 8))]
        contract_close(prop, ccase, torch.cat(steps, 1), logits, "positions continue from cache.length, and each block gets cache.layers[i]",
                       atol=1e-4, rtol=1e-4)
    return {"max_error": error, "cache": "PASS"}


def check_train_step_contract(train_step):
    """Judge ``train_step(model, optimizer, inputs, targets, scored)``: one optimizer step on the scored positions' cross-entropy."""
    import torch
    import torch.nn.functional as F
    raised = "the function raised on a valid input; the traceback above this message shows where"

    def tiny():
        torch.manual_seed(12)
        return torch.nn.Sequential(torch.nn.Embedding(7, 5), torch.nn.Linear(5, 7))

    inputs = torch.tensor([[1, 2, 3, 4], [6, 5, 4, 3]])
    targets = torch.tensor([[2, 3, 4, 0], [5, 4, 3, 6]])
    scored = torch.tensor([[False, True, True, False], [False, False, True, True]])
    case = "an embedding + linear model on 2 rows of 4 tokens, 4 positions scored, SGD lr 0.1, stale gradients of 5 left in"
    model, mirror = tiny(), tiny()
    for p in model.parameters():
        p.grad = torch.full_like(p, 5.0)  # left over from an earlier step: the step must clear them
    prop = "the step returns the cross-entropy over the scored positions as a float"
    loss = contract_call(prop, case, raised, train_step, model, torch.optim.SGD(model.parameters(), lr=0.1), inputs, targets, scored)
    logits = mirror(inputs)
    want = F.cross_entropy(logits[scored], targets[scored])
    contract_assert(isinstance(loss, float), prop, case, "a Python float", f"{type(loss).__name__}",
                    "return loss.item(): a float, not the tensor with its whole graph")
    hint = "F.cross_entropy(logits[scored], targets[scored]): score only the positions the mask marks"
    if abs(loss - float(F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten()))) < 1e-6:
        hint = "every position was scored: index the logits and targets with the scored mask first"
    contract_close(prop, case, loss, float(want.detach()), hint, atol=1e-6, rtol=1e-6)
    want.backward()
    torch.optim.SGD(mirror.parameters(), lr=0.1).step()
    prop = "the weights move by exactly one optimizer step on this loss"
    for (name, p), q in zip(model.named_parameters(), mirror.parameters()):
        hint = "optimizer.zero_grad(), loss.backward(), optimizer.step(), in that order"
        if torch.allclose(p, q - 0.5, atol=1e-6):
            hint = "the stale gradients were kept: call optimizer.zero_grad() before loss.backward()"
        contract_close(prop + f" ({name})", case, p, q, hint, atol=1e-6, rtol=1e-6)
    return {"loss": loss}


def check_kv_generation_contract(generate):
    """Judge ``generate(model, prompt, n_new, *, cache=True)`` with a model whose next token depends on the whole past.

    The model (defined here) reads its past through the student's own ``KVCache`` when given one: its keys are the
    token ids, so a cache that forgets, repeats or misplaces a key changes the answer.
    """
    import torch
    raised = "the function raised on a valid input; the traceback above this message shows where"

    class Counter(torch.nn.Module):
        """Next token = (3 * sum of the past + length) mod 11; counts the tokens each call is fed."""

        def __init__(self):
            super().__init__()
            self.config = CapstoneConfig(vocab=11, d_model=4, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=4, max_len=16)
            self.fed = []
            self.layer_type = None

        def forward(self, tokens, cache=None):
            self.fed.append(tokens.shape[1])
            past = tokens.double()
            if cache is not None:
                start = cache.length
                k = tokens.double()[:, None, :, None].expand(-1, 1, -1, 2)       # (B, 1, T, head_dim 2)
                for layer in cache.layers:
                    keys, _ = layer.append(k, k, start)
                    self.layer_type = type(layer)
                past = keys[:, 0, :, 0]                                          # (B, start + T)
            t = torch.arange(1, past.shape[1] + 1, dtype=torch.float64)
            nxt = (3 * past.cumsum(1) + t).remainder(11).long()                  # (B, T): the next token after each position
            return torch.nn.functional.one_hot(nxt, 11).float() * 5.0

    def by_rule(prompt, n_new):
        tokens = prompt.tolist()
        for row in tokens:
            for _ in range(n_new):
                row.append((3 * sum(row) + len(row)) % 11)
        return torch.tensor(tokens)

    prompt = torch.tensor([[4, 1, 7], [0, 9, 2]])
    for cache in (False, True):
        model = Counter()
        prop = f"greedy decoding with cache={cache} gives the model's tokens"
        case = f"a model whose next token is (3 * sum of the past + length) mod 11, prompt (2, 3), 6 new tokens, cache={cache}"
        out = contract_call(prop, case, raised, generate, model, prompt, 6, cache=cache)
        hint = "append logits[:, -1].argmax(-1) each step; " + (
            "through the cache: feed the prompt once, then only the newest token, and let the model read the rest from the cache"
            if cache else "without a cache, feed the whole sequence every step")
        contract_assert(isinstance(out, torch.Tensor) and torch.equal(out, by_rule(prompt, 6)), prop, case,
                        f"{by_rule(prompt, 6).tolist()}", f"{out.tolist() if isinstance(out, torch.Tensor) else out!r}", hint)
        fed = [3] + [1] * 5 if cache else [3, 4, 5, 6, 7, 8]
        contract_assert(model.fed == fed, "with a cache each step feeds only the newest token" if cache else "without a cache each step feeds the whole sequence",
                        case, f"tokens fed per call {fed}", f"{model.fed}",
                        "the prompt goes in once; after that one token per step (its keys join the cache)" if cache else
                        "cache=False is the baseline: the whole sequence every step, no KVCache")
    _check_layer_kv_refusals(model.layer_type)
    out = contract_call("n_new=0 returns the prompt", "prompt (2, 3), n_new=0", raised, generate, Counter(), prompt, 0)
    contract_assert(isinstance(out, torch.Tensor) and torch.equal(out, prompt), "n_new=0 returns the prompt", "prompt (2, 3), n_new=0",
                    f"{prompt.tolist()}", f"{out!r}"[:120], "a loop of zero steps returns the prompt unchanged")
    return {"tokens": "PASS", "fed": "PASS"}


def _check_layer_kv_refusals(layer_type):
    """A LayerKV holding 2 of 4 positions refuses, with ValueError, a write that skips back or runs past its end."""
    import torch
    prop = "the cache refuses a write that is not at its end or does not fit"
    writes = (("a LayerKV(1, 1, 4, 2) holding 2 positions, asked to write 1 position at start=1", 1, 1,
               "refuse unless start == self.length: a write elsewhere overwrites keys or leaves a gap"),
              ("a LayerKV(1, 1, 4, 2) holding 2 positions, asked to write 3 positions at start=2", 2, 3,
               "refuse unless start + T <= max_len: the buffers hold max_len positions"))
    for case, start, t, hint in writes:
        layer = contract_call(prop, case, "LayerKV(batch, n_kv_heads, max_len, head_dim) builds empty buffers",
                              layer_type, 1, 1, 4, 2)
        contract_call(prop, case, "a write at start=0 into an empty cache is valid", layer.append,
                      torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2), 0)
        try:
            layer.append(torch.ones(1, 1, t, 2), torch.ones(1, 1, t, 2), start)
        except ValueError:
            continue
        except Exception as exc:
            contract_assert(False, prop, case, "ValueError", f"{type(exc).__name__}: {exc}", hint)
        contract_assert(False, prop, case, "ValueError", "no error: the write went through", hint)


def check_induction_batch_contract(induction_batch):
    """Judge ``induction_batch(batch, generator, *, vocab=16, k_min=4, k_max=12) -> (inputs, targets, scored)``."""
    import torch

    raised = "the function raised on a valid input; the traceback above this message shows where"
    prop, case = "rows of k distinct tokens written twice, k from k_min to k_max", "induction_batch(200, generator seeded 3, vocab=16, k_min=3, k_max=9)"
    parts = contract_call(prop, case, raised, induction_batch, 200, torch.Generator().manual_seed(3), vocab=16, k_min=3, k_max=9)
    contract_assert(isinstance(parts, tuple) and len(parts) == 3, prop, case, "a tuple (inputs, targets, scored)", f"{type(parts).__name__}",
                    "return inputs, targets and the scored mask together")
    inputs, targets, scored = parts
    shapes = [tuple(getattr(t, "shape", ())) for t in parts]
    contract_assert(shapes == [(200, 17)] * 3 and scored.dtype == torch.bool, prop, case, "three tensors of shape (200, 17), scored of dtype bool",
                    f"{shapes}, scored {getattr(scored, 'dtype', '')}", "sequences of 2 k_max tokens; inputs drop the last, targets the first")
    contract_assert(torch.equal(inputs[:, 1:], targets[:, :-1]), "targets are the inputs shifted by one", case, "targets[:, t] == inputs[:, t + 1]",
                    "they differ", "slice one sequence twice: inputs = seq[:, :-1], targets = seq[:, 1:]")
    sequences = torch.cat((inputs, targets[:, -1:]), 1)
    lengths = scored.sum(1) + 1
    for row, k in zip(sequences, lengths.tolist()):
        segment = row[:k].tolist()
        contract_assert(3 <= k <= 9 and len(set(segment)) == k and row[k:2 * k].tolist() == segment, prop, case,
                        "k distinct tokens, then the same k again", f"{row.tolist()} with {k - 1} scored positions",
                        "draw k distinct tokens (torch.randperm(vocab)[:k]) and write them twice; score the repeat's 2nd..k-th targets")
    position = torch.arange(17)[None, :]
    want = (position >= lengths[:, None]) & (position <= 2 * lengths[:, None] - 2)
    contract_assert(torch.equal(scored, want), "scored marks exactly the targets an induction head can find", case,
                    "targets k+1 .. 2k-1 of each row (input positions k .. 2k-2)", "another set of positions",
                    "the first token of the repeat cannot be predicted (nothing says where the repeat starts); the filler neither")
    contract_assert(len(set(lengths.tolist())) >= 5, "k is drawn for each row", case, "several lengths among 200 rows",
                    f"lengths {sorted(set(lengths.tolist()))}", "draw k for each row, not once for the batch")
    again = induction_batch(200, torch.Generator().manual_seed(3), vocab=16, k_min=3, k_max=9)[0]
    contract_assert(torch.equal(again, inputs), "the generator alone decides the batch", case, "the same batch from the same seed",
                    "a different batch", "draw every random number from the generator argument, not from torch's global state")
    return {"rows": 200, "scored": "PASS"}


def check_fit_induction_contract(fit_induction):
    """Judge ``fit_induction(model, step, steps, seed, *, batch, lr, warmup, ...)``: AdamW, warm-up then linear decay, fresh batches."""
    import torch

    raised = "the function raised on a valid input; the traceback above this message shows where"

    class Tiny(torch.nn.Module):
        """A stand-in model: one weight and the config that names the vocabulary."""

        def __init__(self):
            super().__init__()
            self.config = CapstoneConfig(vocab=16)
            self.weight = torch.nn.Parameter(torch.zeros(3))

    seen = []

    def step(model, optimizer, inputs, targets, scored):
        seen.append((optimizer, optimizer.param_groups[0]["lr"], inputs.clone(), model.training))
        optimizer.step()  # no gradients: moves nothing, but keeps the scheduler's order
        return float(len(seen))

    case = "steps=10, seed=4, batch=6, lr=0.5, warmup=4, a step that records the optimizer, its lr and the batch"
    prop = "the step runs once per step and the losses are what it returned"
    losses = contract_call(prop, case, raised, fit_induction, Tiny(), step, 10, 4, batch=6, lr=0.5, warmup=4)
    contract_assert(isinstance(losses, (list, tuple)) and list(losses) == [float(i) for i in range(1, 11)] and len(seen) == 10, prop, case,
                    "the floats 1, 2, ..., 10", f"{losses!r}"[:120], "call step(model, optimizer, inputs, targets, scored) once per step and collect what it returns")
    optimizer = seen[0][0]
    contract_assert(isinstance(optimizer, torch.optim.AdamW) and optimizer.param_groups[0]["weight_decay"] == 0.0 and all(s[0] is optimizer for s in seen),
                    "one AdamW optimizer without weight decay for the whole run", case, "torch.optim.AdamW(..., weight_decay=0), made once",
                    f"{type(optimizer).__name__}, weight_decay {optimizer.param_groups[0].get('weight_decay')}",
                    "AdamW's default weight_decay is 0.01: pass weight_decay=0, and build the optimizer before the loop")
    rates = [round(s[1], 9) for s in seen]
    want = [round(0.5 * min(1.0, (t + 1) / 4) * (1 - t / 10), 9) for t in range(10)]
    hint = "at step t = 0, 1, ...: lr * min(1, (t + 1) / warmup) * (1 - t / steps), set before the step (LambdaLR, then schedule.step() after)"
    if rates == [round(0.5 * (1 - t / 10), 9) for t in range(10)]:
        hint = "the warm-up is missing: the rate rises linearly over the first `warmup` steps"
    contract_assert(rates == want, "the rate rises over warmup steps, then falls linearly towards 0", case, f"{want}", f"{rates}", hint)
    batches = [s[2] for s in seen]
    contract_assert(all(b.shape == (6, 23) for b in batches) and not torch.equal(batches[0], batches[1]), "every step gets a fresh batch of `batch` rows",
                    case, "10 different batches of shape (6, 23)", f"shapes {[tuple(b.shape) for b in batches[:3]]} ...",
                    "draw induction_batch(batch, generator, ...) inside the loop, from one generator made before it")
    first = batches
    seen.clear()
    contract_call(prop, case, raised, fit_induction, Tiny(), step, 10, 4, batch=6, lr=0.5, warmup=4)
    contract_assert(all(torch.equal(a, s[2]) for a, s in zip(first, seen)), "the seed alone decides the batches", case,
                    "the same 10 batches from seed 4 twice", "different batches", "use torch.Generator().manual_seed(seed + 1), made once")
    contract_assert(all(s[3] for s in seen), "the model trains in training mode", case, "model.training True in every step", "False",
                    "call model.train() before the loop (and model.eval() after it)")
    return {"rates": "PASS", "batches": "PASS"}


def check_induction_accuracy_contract(induction_accuracy):
    """Judge ``induction_accuracy(model, *, batch, seed, k_min, k_max)``: greedy accuracy on the scored positions only."""
    import torch

    raised = "the function raised on a valid input; the traceback above this message shows where"

    def repeat_length(row, k_min=2):
        """The k of a row: its first k tokens written again right after them (the shortest such k from k_min)."""
        return next(k for k in range(k_min, (len(row) + 1) // 2 + 1) if row[k:2 * k].tolist() == row[:min(k, len(row) - k)].tolist())

    class HalfRight(torch.nn.Module):
        """Predicts the repeat right at odd positions and wrong at even ones; token 0 outside the repeat."""

        def __init__(self):
            super().__init__()
            self.config = CapstoneConfig(vocab=16)
            self.hits = []

        def forward(self, tokens):
            guess = torch.zeros_like(tokens)
            for b, row in enumerate(tokens):
                k = repeat_length(row)
                for t in range(k, min(2 * k - 1, tokens.shape[1])):
                    right = int(row[t + 1 - k])
                    guess[b, t] = right if t % 2 else (right + 1) % 16
                    self.hits.append(t % 2 == 1)
            return torch.nn.functional.one_hot(guess, 16).float()

    model = HalfRight()
    prop, case = "accuracy counts the scored positions only", "a model right at odd positions of the repeat only, batch=64, seed=5"
    got = contract_call(prop, case, raised, induction_accuracy, model, batch=64, seed=5)
    contract_assert(bool(model.hits), prop, case, "a score of the model's own predictions", f"{got!r}, without calling the model",
                    "call the model on a fresh induction batch and compare its argmax with the targets")
    want = sum(model.hits) / len(model.hits)
    hint = "(argmax of the logits == targets)[scored].float().mean(): the first half and the filler do not count"
    contract_assert(isinstance(got, float) and abs(got - want) < 1e-6, prop, case, f"{want:.4f} as a float", f"{got!r}", hint)
    return {"accuracy": got}
