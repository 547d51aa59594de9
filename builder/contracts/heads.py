"""Module 3 contracts for head geometry and multi-head attention: split a width into heads, merge them back, run the whole layer."""

from .calls import contract_call
from .violations import ContractViolation, contract_assert, contract_close

__all__ = ["check_split_heads_contract", "check_merge_heads_contract", "check_multi_head_attention_contract"]


def check_split_heads_contract(split_heads):
    """Judge ``split_heads(x, n_heads)``: (..., T, H*d) -> (..., H, T, d), head h owning features h*d..(h+1)*d-1."""
    import torch

    batch, tokens, heads, width = 2, 3, 4, 5
    x = torch.arange(batch * tokens * heads * width, dtype=torch.float64).reshape(batch, tokens, heads * width)
    case = f"x = arange reshaped to ({batch}, {tokens}, {heads * width}), n_heads={heads}"
    prop = "head h of token t holds features h*d_head .. (h+1)*d_head - 1 of that token"
    result = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", split_heads, x, heads)
    contract_assert(
        isinstance(result, torch.Tensor) and tuple(result.shape) == (batch, heads, tokens, width),
        "shape (B, T, H*d) -> (B, H, T, d)", case, f"shape {(batch, heads, tokens, width)}",
        f"shape {tuple(getattr(result, 'shape', ()))}",
        "split the last axis into (H, d), then move the head axis in front of the token axis",
    )
    for b in range(batch):
        for h in range(heads):
            for t in range(tokens):
                want = x[b, t, h * width:(h + 1) * width]
                got = result[b, h, t]
                if not torch.equal(got, want):
                    if torch.equal(result, x.reshape(batch, heads, tokens, width)):
                        hint = "reshaping straight to (B, H, T, d) mixes tokens; reshape to (B, T, H, d) first, then transpose(1, 2)"
                    else:
                        hint = "view the last axis as (H, d_head) (head-major), then swap the token and head axes"
                    raise ContractViolation(prop, case + f"; batch {b}, head {h}, token {t}", want.tolist(), got.tolist(), hint)
    three = torch.zeros(7, 6, dtype=torch.float64)
    case3 = "x of shape (7, 6) with no batch axis, n_heads=3"
    single = contract_call("leading axes are kept as they are", case3, "the function raised on a valid input; the traceback above this message shows where", split_heads, three, 3)
    contract_assert(
        tuple(single.shape) == (3, 7, 2), "leading axes are kept as they are", case3, "shape (3, 7, 2)",
        f"shape {tuple(single.shape)}", "index the axes from the end (-1, -2) so any number of leading axes works",
    )
    return {"cases": 2}


def check_merge_heads_contract(merge_heads):
    """Judge ``merge_heads(x)``: (..., H, T, d) -> (..., T, H*d), the exact inverse of splitting the width into heads.

    The input is contiguous, like an attention output, so its transpose is not: ``view`` fails there.
    """
    import torch

    batch, heads, tokens, width = 2, 3, 4, 5
    flat = torch.randn(batch, tokens, heads * width, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    split = flat.reshape(batch, tokens, heads, width).transpose(1, 2).contiguous()  # (B, H, T, d), like an attention output
    case = f"heads = x.reshape({batch}, {tokens}, {heads}, {width}).transpose(1, 2).contiguous()"
    prop = "merging undoes the split: token t gets head 0's features, then head 1's, ..."
    result = contract_call(prop, case, "the function raised on a valid input; the traceback above this message shows where", merge_heads, split)
    contract_assert(
        isinstance(result, torch.Tensor) and tuple(result.shape) == (batch, tokens, heads * width),
        "shape (B, H, T, d) -> (B, T, H*d)", case, f"shape {(batch, tokens, heads * width)}",
        f"shape {tuple(getattr(result, 'shape', ()))}", "move the head axis behind the token axis, then flatten the last two axes",
    )
    if not torch.equal(result, flat):
        if torch.equal(result, split.reshape(batch, tokens, heads * width)):
            hint = "the heads were merged without moving the head axis back: transpose(-3, -2) before flattening"
        elif torch.equal(result, split.transpose(-2, -1).reshape(batch, tokens, heads * width)):
            hint = "the wrong axes were transposed: swap heads and tokens (-3, -2), not tokens and features"
        else:
            hint = "transpose(-3, -2) gives (..., T, H, d); then flatten(-2) or reshape(..., T, H*d)"
        where = (result != flat).nonzero()[0].tolist()
        raise ContractViolation(prop, case, f"{float(flat[tuple(where)])} at {tuple(where)}", f"{float(result[tuple(where)])}", hint)
    return {"cases": 1}


def check_multi_head_attention_contract(attention_class):
    """Judge ``attention_class(d_model, n_heads, n_kv_heads=None, *, causal=True)`` and its ``forward``.

    ``forward(x, *, token_valid=None, empty_row='error', return_weights=False)`` must project x to
    queries, keys and values, split them into heads (K/V heads shared by consecutive query heads),
    attend with the causal and padding masks, merge the heads and apply the output projection.
    The reference here is built independently from the layer's own weights and PyTorch's attention.
    Returns the largest error; raises ContractViolation naming the first property that fails.
    """
    import torch
    import torch.nn.functional as F

    d_model, n_heads, n_kv, batch, length = 8, 4, 2, 2, 5
    gen = torch.Generator().manual_seed(2024)
    case = f"attention_class({d_model}, {n_heads}, {n_kv}, causal=True) in float64, x of shape ({batch}, {length}, {d_model})"
    raised = "the function raised on a valid input; the traceback above this message shows where"
    layer = contract_call("the layer builds", case, raised, attention_class, d_model, n_heads, n_kv, causal=True)
    contract_assert(
        isinstance(layer, torch.nn.Module), "the layer builds", case, "an nn.Module instance",
        f"{type(layer).__name__} {layer!r}"[:120], "the exercise is the class MultiHeadSelfAttention; keep its __init__",
    )
    layer = layer.double()
    weights = {}
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            module = getattr(layer, name, None)
            contract_assert(
                isinstance(getattr(module, "weight", None), torch.Tensor), "the layer keeps q_proj, k_proj, v_proj and out_proj",
                case, f"a linear layer {name}", f"{type(module).__name__}", "keep the four projections built in __init__",
            )
            module.weight.copy_(torch.randn(module.weight.shape, dtype=torch.float64, generator=gen))
            weights[name] = module.weight.detach().clone()
    x = torch.randn(batch, length, d_model, dtype=torch.float64, generator=gen)
    d_head, group = d_model // n_heads, n_heads // n_kv

    def reference(x, *, causal=True, tile=False, out_proj=True, token_valid=None, transpose=True):
        def heads(t, h):  # (B, T, h·d) -> (B, h, T, d)
            return t.reshape(t.shape[0], t.shape[1], h, d_head).transpose(1, 2)

        q = heads(x @ weights["q_proj"].T, n_heads)
        k, v = (heads(x @ weights[name].T, n_kv) for name in ("k_proj", "v_proj"))
        share = (lambda t: t.repeat(1, group, 1, 1)) if tile else (lambda t: t.repeat_interleave(group, dim=1))
        allowed = torch.ones(x.shape[0], 1, x.shape[1], x.shape[1], dtype=torch.bool)
        if causal:
            allowed = allowed & torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
        if token_valid is not None:
            allowed = allowed & token_valid[:, None, None, :] & token_valid[:, None, :, None]
        out = F.scaled_dot_product_attention(q, share(k), share(v), attn_mask=allowed)
        if token_valid is not None:
            out = out * token_valid[:, None, :, None]  # padded queries: zero rows
        merged = (out.transpose(1, 2) if transpose else out).reshape(x.shape[0], x.shape[1], n_heads * d_head)
        return merged @ weights["out_proj"].T if out_proj else merged

    prop = "the output equals an independent multi-head attention built from the layer's weights"
    with torch.no_grad():
        got = contract_call(prop, case, raised, layer, x)
        contract_assert(
            isinstance(got, torch.Tensor) and tuple(got.shape) == (batch, length, d_model), "output shape (B, T, d_model)", case,
            f"shape {(batch, length, d_model)}", f"shape {tuple(getattr(got, 'shape', ()))}",
            "merge the heads back to (B, T, H*d) and apply out_proj",
        )
        want = reference(x)
        hint = "project, split into heads, repeat each K/V head for its group, attend with the causal mask, merge, out_proj"
        for variant, explanation in (
            (reference(x, causal=False), "the causal mask was not applied: with causal=True a token may not read later tokens"),
            (reference(x, tile=True), "K/V heads were tiled (kv0, kv1, kv0, kv1); consecutive query heads share one: repeat_interleave"),
            (reference(x, out_proj=False), "the merged heads were returned without the output projection out_proj"),
            (reference(x, transpose=False), "the heads were merged without moving the head axis back: reshaping (B, H, T, d) "
                                            "straight to (B, T, H*d) mixes tokens and heads; use merge_heads (transpose, then flatten)"),
        ):
            if torch.allclose(got, variant, atol=1e-9):
                hint = explanation
                break
        error = contract_close(prop, case, got, want, hint, atol=1e-9, rtol=1e-9)

        returned = contract_call("return_weights=True returns (output, weights)", case + ", return_weights=True", raised,
                                 layer, x, return_weights=True)
        contract_assert(
            isinstance(returned, tuple) and len(returned) == 2 and tuple(getattr(returned[1], "shape", ())) == (batch, n_heads, length, length),
            "return_weights=True returns (output, weights)", case + ", return_weights=True",
            f"a pair whose weights have shape {(batch, n_heads, length, length)}", f"{type(returned).__name__}",
            "return (output, result.weights) when return_weights is set: one weight matrix per query head",
        )
        contract_close("return_weights=True returns (output, weights)", case + ", return_weights=True", returned[0], want, hint,
                       atol=1e-9, rtol=1e-9)

        token_valid = torch.tensor([[True] * length, [True, True, True, False, False]])
        padded_case = case + ", token_valid marks the last 2 tokens of sequence 1 as padding, empty_row='zero'"
        padded = contract_call("padding keys are never read and padded queries give zero rows", padded_case, raised,
                               layer, x, token_valid=token_valid, empty_row="zero")
        contract_close(
            "padding keys are never read and padded queries give zero rows", padded_case, padded,
            reference(x, token_valid=token_valid),  # out_proj has no bias, so a zero row stays zero
            "combine token_valid into the mask for both keys (columns) and queries (rows), and pass empty_row through",
            atol=1e-9, rtol=1e-9,
        )
    return {"max_error": error}

