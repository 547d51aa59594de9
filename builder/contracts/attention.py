"""Contract check for a scaled dot-product attention written in PyTorch."""

from .calls import contract_call
from .violations import ContractViolation, contract_assert, contract_close

__all__ = ["check_attention_contract"]


def check_attention_contract(attention):
    """Judge ``attention(q, k, v, allowed=None, *, empty_row='error')`` against PyTorch and geometry.

    ``attention`` returns an object with ``.output`` and ``.weights`` (and, when it has them,
    ``.scores``, judged at allowed entries only, and ``.empty_rows`` flags, which are judged too).
    Blocked keys must get weight exactly 0; how their scores are filled (-inf, -1e9) is not judged.
    Empty-row policy: a query row with no allowed key raises ValueError by default, and with
    ``empty_row='zero'`` its weights and output are exactly 0 (never NaN).
    Returns a summary of the largest errors; raises ContractViolation naming the first property that fails.
    """
    import torch
    import torch.nn.functional as F

    def _works_without_batch_axes(attention, q, k, v, allowed):
        """True when ``attention`` returns normally on the first (T, d) slice of a batched call that failed."""
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # x.T on a 2-D tensor is fine; on the batched call it warned already
                attention(q[0, 0].detach(), k[0, 0].detach(), v[0, 0].detach(), allowed)
        except Exception:  # noqa: BLE001 - any failure here means the batch axes are not the cause
            return False
        return True

    gen = torch.Generator().manual_seed(303)
    q = torch.randn(2, 2, 3, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    k = torch.randn(2, 2, 5, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    v = torch.randn(2, 2, 5, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    # Three cached-decode queries at absolute positions 2, 3, 4 over five keys.
    allowed = torch.arange(5)[None, :] <= (2 + torch.arange(3))[:, None]
    case = "q[2,2,3,4], k[2,2,5,4], v[2,2,5,6] float64, causal mask for queries at positions 2..4"

    try:
        result = contract_call("output matches F.scaled_dot_product_attention", case, "the function raised on a valid input; the traceback above this message shows where", attention, q, k, v, allowed)
    except ContractViolation as failure:
        if not _works_without_batch_axes(attention, q, k, v, allowed):
            raise
        raise ContractViolation(
            failure.property, failure.on_input, failure.expected, failure.actual,
            "it works on 2-D q, k, v but not on batched ones: k.T reverses every axis of a batched tensor (deprecated "
            "beyond 2-D), so (B, H, T, d) becomes (d, T, H, B); transpose the last two axes with k.transpose(-2, -1) or k.mT",
        ) from failure.__cause__
    contract_assert(
        isinstance(getattr(result, "output", None), torch.Tensor) and isinstance(getattr(result, "weights", None), torch.Tensor),
        "output matches F.scaled_dot_product_attention", case, "a result with tensor attributes .output and .weights",
        f"{type(result).__name__} {result!r}"[:120], "return AttentionResult(output=..., weights=..., scores=..., empty_rows=...)",
    )
    library = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.0)
    hint = ("divide the scores by sqrt(d_k), take softmax over the key axis (the last one), "
            "and set masked scores to -inf before the softmax")
    with torch.no_grad():
        raw = q @ k.transpose(-2, -1) / 2.0  # sqrt(d_k) = 2
        usual_mistakes = (
            (F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=1.0 / 4),
             "the scores were divided by d_k; divide by sqrt(d_k)"),
            (F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=1.0),
             "the scores were not scaled; divide q @ k^T by sqrt(d_k)"),
            (torch.softmax(raw.masked_fill(~allowed, float("-inf")), dim=-2) @ v,
             "the softmax normalised over the query axis (dim=-2); each query's weights must sum to 1 over the keys (dim=-1)"),
            (F.scaled_dot_product_attention(q, k, v),
             "the mask was ignored: blocked keys still got weight; set their scores to -inf before the softmax"),
            ((torch.softmax(raw, dim=-1) * allowed) @ v,
             "the mask was applied after the softmax: zeroing weights leaves rows that do not sum to 1; mask the scores instead"),
        )
        for wrong, mistake in usual_mistakes:
            if result.output.shape == wrong.shape and torch.allclose(result.output.detach().double(), wrong, atol=1e-9):
                hint = mistake
                break
    output_error = contract_close("output matches F.scaled_dot_product_attention", case, result.output, library, hint)
    row_sums = result.weights.sum(-1)
    contract_close(
        "attention weights: every row sums to 1", case, row_sums, torch.ones_like(row_sums),
        "softmax normalised over the query axis instead of the key axis", atol=1e-12, rtol=0,
    )
    masked_mass = result.weights.masked_select(~allowed.expand_as(result.weights))
    contract_close(
        "attention weights: masked keys get exactly 0", case, masked_mass, torch.zeros_like(masked_mass),
        "the mask was applied after the softmax, or True was read as 'blocked' instead of 'allowed'", atol=0, rtol=0,
    )
    if hasattr(result, "scores"):
        # Blocked entries are not judged: -inf or any fill low enough that their weight is exactly 0
        # (checked above) behaves the same.
        contract_close(
            "scores are q.k / sqrt(d_k) at every allowed entry", case,
            result.scores.detach().masked_fill(~allowed, 0.0), raw.masked_fill(~allowed, 0.0),
            "return the scaled scores (before the softmax), not the weights or the unscaled dot products",
        )
    probe = torch.randn(result.output.shape, dtype=torch.float64, generator=gen)
    detach_hint = "a detach(), an in-place edit or a non-differentiable step (argmax, .item()) inside the attention"
    contract_assert(
        result.output.requires_grad, "gradients flow from the output to q, k and v", case,
        "an output that requires grad", "an output cut off from the autograd graph", detach_hint,
    )
    ours = torch.autograd.grad((result.output * probe).sum(), (q, k, v), allow_unused=True)
    theirs = torch.autograd.grad((library * probe).sum(), (q, k, v))
    for name, grad in zip("qkv", ours):
        contract_assert(
            grad is not None, f"gradient with respect to {name} matches F.scaled_dot_product_attention", case,
            f"a gradient for {name}", f"none: {name} does not reach the output through autograd", detach_hint,
        )
    gradient_error = max(
        contract_close(
            f"gradient with respect to {name} matches F.scaled_dot_product_attention", case, a, b, detach_hint,
            atol=1e-11, rtol=1e-11,
        )
        for name, a, b in zip("qkv", ours, theirs)
    )

    # A batch axis that only V has: the mask varies along it, queries and keys broadcast.
    bq = torch.zeros(1, 2, 1, dtype=torch.float64)
    bk = torch.zeros(1, 3, 1, dtype=torch.float64)
    bv = torch.tensor([[[1.0], [2.0], [3.0]], [[4.0], [5.0], [6.0]]], dtype=torch.float64)
    bm = torch.tensor([[[1, 0, 0], [0, 1, 0]], [[0, 0, 1], [1, 1, 0]]], dtype=torch.bool)
    batched = contract_call(
        "a batch axis carried only by V broadcasts with its mask", "q[1,2,1], k[1,3,1], v[2,3,1], mask[2,2,3]", "the function raised on a valid input; the traceback above this message shows where", attention, bq, bk, bv, bm,
    )
    contract_close(
        "a batch axis carried only by V broadcasts with its mask",
        "q[1,2,1]=0, k[1,3,1]=0, v[2,3,1]=1..6, per-batch mask[2,2,3]", batched.output,
        torch.tensor([[[1.0], [2.0]], [[6.0], [4.5]]], dtype=torch.float64),
        "the batch shape was taken from q and k only; broadcast q, k, v and the mask to their joint batch shape",
    )

    # An empty row is rejected by default and zeroed, with finite gradients, on request.
    empty = allowed.clone()
    empty[1] = False
    try:
        attention(q.detach(), k.detach(), v.detach(), empty)
    except ValueError:
        pass
    else:
        raise ContractViolation(
            "a fully masked row raises ValueError by default", case + ", row 1 fully masked",
            "ValueError", "returned normally", "softmax over an all -inf row gives NaN; detect empty rows before it",
        )
    zq, zk, zv = (t.detach().clone().requires_grad_() for t in (q, k, v))
    zero = contract_call(
        "empty_row='zero' gives a zero output row", case + ", row 1 fully masked", "the function raised on a valid input; the traceback above this message shows where", attention, zq, zk, zv, empty, empty_row="zero",
    )
    contract_close(
        "empty_row='zero' gives a zero output row", case + ", row 1 fully masked", zero.output[..., 1, :],
        torch.zeros_like(zero.output[..., 1, :]), "the empty row was filled with NaN or with a uniform average", atol=0, rtol=0,
    )
    zero_grads = torch.autograd.grad(zero.output.square().sum(), (zq, zk, zv))
    for name, grad in zip("qkv", zero_grads):
        contract_assert(
            bool(torch.isfinite(grad).all()), f"gradients stay finite with an empty row (d{name})",
            case + ", row 1 fully masked, empty_row='zero'", "finite gradients", "NaN or infinity in the gradient",
            "exp(-inf - -inf) = NaN inside the backward pass; use a safe max of 0 for empty rows",
        )
    contract_close(
        "an empty row passes no gradient to its query", case + ", row 1 fully masked", zero_grads[0][..., 1, :],
        torch.zeros_like(zero_grads[0][..., 1, :]), "the empty row still received weights before being zeroed", atol=0, rtol=0,
    )
    if hasattr(result, "empty_rows"):
        flags = torch.zeros(2, 2, 3, dtype=torch.bool)
        flags[..., 1] = True
        contract_assert(
            torch.equal(zero.empty_rows.expand(2, 2, 3), flags), "empty_rows flags exactly the fully masked query rows",
            case + ", row 1 fully masked", flags[0, 0].tolist(), zero.empty_rows.tolist(),
            "empty_rows = ~allowed.any(dim=-1), taken after broadcasting the mask to the scores' shape",
        )

    # Cached decoding: the last two queries sit at absolute positions 3 and 4.
    fq, fk = torch.randn(5, 4, dtype=torch.float64, generator=gen), torch.randn(5, 4, dtype=torch.float64, generator=gen)
    fv = torch.randn(5, 2, dtype=torch.float64, generator=gen)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    full = attention(fq, fk, fv, causal).output
    incremental = contract_call(
        "cached queries keep their absolute positions", "queries 3..4 against 5 keys", "the function raised on a valid input; the traceback above this message shows where", attention, fq[3:], fk, fv, causal[3:],
    ).output
    contract_close(
        "cached queries keep their absolute positions", "5 tokens, queries 3..4 against all 5 cached keys",
        incremental, full[3:], "the causal mask for cached queries was built from local positions 0..1",
    )
    wrong = attention(fq[3:], fk, fv, torch.ones(2, 5, dtype=torch.bool).tril()).output
    wrong_error = float((wrong - full[3:]).abs().max())
    contract_assert(
        wrong_error > 1e-3, "a local-position mask changes cached outputs", "5 tokens, queries 3..4 with a top-left triangle",
        "a visible difference (> 1e-3)", f"max difference {wrong_error:.3g}",
        "the implementation ignored the mask it was given",
    )

    # Without a mask, permuting the tokens permutes the outputs.
    perm = torch.tensor([2, 0, 4, 1, 3])
    original = attention(fq, fk, fv).output
    contract_close(
        "permutation equivariance without a mask", "5 tokens permuted by [2, 0, 4, 1, 3]",
        attention(fq[perm], fk[perm], fv[perm]).output, original[perm],
        "position information leaked into the attention itself (a hidden mask or positional term)",
    )
    return {
        "output_max_error": output_error,
        "gradient_max_error": gradient_error,
        "wrong_cache_mask_max_error": wrong_error,
        "batch_broadcast": "PASS",
        "empty_rows": "PASS",
        "permutation": "PASS",
    }
