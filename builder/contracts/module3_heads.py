"""Module 3 contracts for head geometry: split a width into heads, merge them back, share K/V heads (GQA)."""

from .calls import contract_call
from .violations import ContractViolation, contract_assert

__all__ = ["check_split_heads_contract", "check_merge_heads_contract"]


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
