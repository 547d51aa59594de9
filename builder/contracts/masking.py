"""Contract checks for Module 5's additive masks and for softmax attention with a sink logit."""

from .calls import contract_call, contract_parts
from .violations import ContractViolation, contract_assert, contract_close

__all__ = ["check_additive_mask_contract", "check_sink_attention_contract"]


def check_additive_mask_contract(make_mask):
    """Judge ``make_mask(n, window=None, n_sink=0)``: an additive causal mask with a window and sinks.

    The mask holds 0.0 where query i may read key j and -inf where it may not. Returns a summary;
    raises ContractViolation naming the first property that fails.
    """
    import numpy as np

    def rule(n, window, n_sink):
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        allowed = j <= i
        if window is not None:
            allowed = allowed & ((i - j < window) | (j < n_sink))
        return allowed

    cases = [(6, None, 0), (9, 3, 0), (9, 3, 2), (5, 1, 0), (4, 8, 0), (7, 2, 7), (10, 4, 1)]
    for n, window, n_sink in cases:
        case = f"make_mask({n}, window={window}, n_sink={n_sink})"
        mask = np.asarray(contract_call(
            "valid sizes give a mask", case, "only n < 1, window < 1 or n_sink outside 0..n are invalid",
            make_mask, n, window=window, n_sink=n_sink,
        ))
        contract_assert(
            mask.shape == (n, n), "one row per query and one column per key", case, f"shape {(n, n)}",
            f"shape {mask.shape}", "build the mask from query positions (rows) against key positions (columns)",
        )
        contract_assert(
            mask.dtype.kind == "f", "the mask is additive: floats that are added to the scores", case,
            "a float array of 0.0 and -inf", f"dtype {mask.dtype}",
            "a boolean mask was returned; convert with np.where(allowed, 0.0, -np.inf)",
        )
        contract_assert(
            bool(np.all((mask == 0) | np.isneginf(mask))), "every entry is exactly 0.0 (allowed) or -inf (blocked)", case,
            "only 0.0 and -inf", f"values {sorted(set(np.unique(mask).tolist()))[:6]}",
            "a blocked entry must be -inf (not a large negative number, not 1) so its softmax weight is exactly 0",
        )
        got, want = mask == 0, rule(n, window, n_sink)
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        if np.any(got & (j > i)):
            where = tuple(int(t) for t in np.argwhere(got & (j > i))[0])
            raise ContractViolation(
                "no query reads a future key (causal)", case, "-inf above the diagonal",
                f"query {where[0]} may read key {where[1]}", "compare key <= query, not key < query + 1 on the wrong axis; rows are queries",
            )
        if not np.all(np.diag(got)):
            raise ContractViolation(
                "every query reads its own key", case, "0.0 on the diagonal", f"diagonal {np.diag(mask).tolist()}",
                "the comparison excluded the diagonal (key < query instead of key <= query)",
            )
        recent = got[:, n_sink:].sum(axis=1).tolist()
        expected_recent = want[:, n_sink:].sum(axis=1).tolist()
        if window is not None and recent != expected_recent:
            raise ContractViolation(
                "the window keeps exactly `window` recent keys, the query's own included", case,
                f"allowed non-sink keys per row {expected_recent}", f"{recent}",
                "off by one: keep query - key < window (not <= window), which counts the query itself",
            )
        if not np.array_equal(got, want):
            where = tuple(int(t) for t in np.argwhere(got != want)[0])
            raise ContractViolation(
                "the first n_sink keys stay visible to every later query; nothing else outside the window",
                case, f"query {where[0]} {'may' if want[where] else 'may not'} read key {where[1]}",
                f"it {'may' if got[where] else 'may not'}",
                "sinks are keys j < n_sink, still only for j <= i; a window without sinks drops everything older than window - 1",
            )
    for bad in ({"n": 0}, {"n": 4, "window": 0}, {"n": 4, "window": 2, "n_sink": 5}):
        try:
            make_mask(**bad)
        except (TypeError, ValueError):
            continue
        raise ContractViolation(
            "invalid sizes are rejected with TypeError or ValueError", f"make_mask(**{bad})", "an error naming the argument",
            "returned normally", "keep the argument checks at the top of the function",
        )
    return {"cases": len(cases), "causal": "PASS", "window": "PASS", "sinks": "PASS"}


def check_sink_attention_contract(sdpa):
    """Judge ``sdpa(Q, K, V, mask=None, *, sink=None, empty_row='error', return_weights=False)`` in NumPy.

    A sink is one extra logit per query head that joins the softmax's denominator and carries a zero
    value vector. Returns a summary of the largest errors; raises ContractViolation on the first failure.
    """
    import math

    import numpy as np

    def reference(Q, K, V, mask=None, sink=None):
        scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores + mask
        columns = [scores]
        if sink is not None:
            columns.append(np.broadcast_to(np.asarray(sink, dtype=float), scores.shape[:-1] + (1,)))
        extended = np.concatenate(columns, axis=-1)
        top = extended.max(axis=-1, keepdims=True)
        e = np.exp(extended - top)
        weights = (e / e.sum(axis=-1, keepdims=True))[..., : scores.shape[-1]]
        return weights @ V, weights

    def run(prop, case, hint, *args, **kwargs):
        return contract_call(prop, case, hint, sdpa, *args, **kwargs)

    def judge(prop, case, hint, expected, *args, atol=1e-12, rtol=1e-12, **kwargs):
        return contract_close(prop, case, run(prop, case, hint, *args, **kwargs), expected, hint, atol=atol, rtol=rtol)

    gen = np.random.default_rng(505)
    H, T, d, dv = 2, 5, 4, 3
    Q, K, V = gen.standard_normal((H, T, d)), gen.standard_normal((H, T, d)), gen.standard_normal((H, T, dv))
    causal = np.where(np.tri(T, dtype=bool), 0.0, -np.inf)
    case = "Q, K [2 heads, 5 tokens, d_k=4], V [2, 5, 3], float64"

    def run_with_weights(prop, case, hint, *args, **kwargs):
        out, weights = contract_parts(prop, case, run(prop, case, hint, *args, return_weights=True, **kwargs), ("output", "weights"))
        contract_assert(
            np.shape(weights) == (H, T, T), "return_weights=True also returns the token weights [..., T_q, T_k]", case,
            f"shape {(H, T, T)}", f"shape {np.shape(weights)}", "return (output, weights), the weights without the sink's column",
        )
        return out, np.asarray(weights, dtype=float)

    prop = "output equals softmax(Q K^T / sqrt(d_k)) V"
    hint = "divide the scores by sqrt(d_k) (not d_k), and take the softmax over the key axis (the last one)"
    out, weights = run_with_weights(prop, case + ", no mask", hint, Q, K, V)
    error = contract_close(prop, case + ", no mask", out, reference(Q, K, V)[0], hint)
    sums = weights.sum(axis=-1)
    contract_close(
        "without a sink every row of weights sums to 1", case + ", no mask", sums, np.ones_like(sums),
        "the softmax was normalised over the query axis instead of the key axis",
    )
    bias = causal + np.linspace(-1.5, 0.0, T)[None, :]
    judge(
        "a finite mask entry is added to the score, -inf blocks the key", case + ", causal mask with finite biases",
        "add the mask to the scaled scores before the softmax (do not multiply, do not apply it after)",
        reference(Q, K, V, bias)[0], Q, K, V, bias,
    )

    sink = 1.3
    prop, sink_case = "a sink is an extra logit whose value vector is zero", case + ", causal, sink=1.3"
    hint = ("the sink joins the denominator only: adding exp(sink) to the numerator, or adding the sink to every score "
            "(which softmax ignores), gives a different output")
    out, weights = run_with_weights(prop, sink_case, hint, Q, K, V, causal, sink=sink)
    want, want_w = reference(Q, K, V, causal, sink)
    sink_error = contract_close(prop, sink_case, out, want, hint)
    contract_close(
        "with a sink the token weights sum to 1 minus the sink's share", sink_case,
        weights.sum(axis=-1), want_w.sum(axis=-1), "return the token weights, without the sink's column",
    )
    per_head = np.array([-2.0, 3.0]).reshape(H, 1, 1)
    judge(
        "each query head uses its own sink logit", case + ", causal, sink shape (2, 1, 1) = [-2, 3]",
        "broadcast the sink to [..., T_q, 1]; do not use one head's sink (or their mean) for every head",
        reference(Q, K, V, causal, per_head)[0], Q, K, V, causal, sink=per_head,
    )
    judge(
        "a common shift of every score and the sink changes nothing", case + ", mask + 2 and sink + 2",
        "the sink must be compared with the scores inside one softmax, not normalised separately",
        want, Q, K, V, causal + 2.0, sink=sink + 2.0,
    )
    judge(
        "large scores and a large sink stay finite", case + ", Q and K scaled by 40, sink=900",
        "subtract the row maximum over the tokens AND the sink before exp, or exp overflows to inf and NaN",
        reference(40.0 * Q, 40.0 * K, V, causal, 900.0)[0], 40.0 * Q, 40.0 * K, V, causal, sink=900.0,
    )

    empty = causal.copy()
    empty[2] = -np.inf
    try:
        sdpa(Q, K, V, empty)
    except ValueError as exc:
        contract_assert(
            "empty_row='zero'" in str(exc), "the ValueError of a fully masked row names the way out, empty_row='zero'",
            case + ", row 2 fully masked", "a message containing empty_row='zero'", repr(str(exc))[:120],
            "say how to go on in the message: '... or pass empty_row='zero' to return zeros for them'",
        )
    else:
        raise ContractViolation(
            "a fully masked row raises ValueError by default", case + ", row 2 fully masked", "ValueError",
            "returned normally", "softmax over a row of -inf is 0/0 = NaN; detect rows with no allowed key before it",
        )
    prop, empty_case = "empty_row='zero' gives an exact zero row", case + ", row 2 fully masked"
    hint = "NaN on a fully masked row: use a safe max of 0 for empty rows and divide only where the sum > 0"
    zero = np.asarray(run(prop, empty_case, hint, Q, K, V, empty, empty_row="zero"))
    contract_assert(np.shape(zero) == (H, T, dv), prop, empty_case, f"shape {(H, T, dv)}", f"shape {np.shape(zero)}", hint)
    contract_close(prop, empty_case, zero[:, 2], np.zeros((H, dv)), hint, atol=0, rtol=0)
    keep = [0, 1, 3, 4]
    contract_close(
        "empty_row='zero' leaves the other rows unchanged", empty_case, zero[:, keep],
        reference(Q, K, V, causal)[0][:, keep], "the zero policy must act on the empty rows only",
    )
    prop, only_case = "with a sink, a fully masked row sends all its mass to the sink (output 0)", case + ", every key blocked, sink=1.3"
    hint = "a row with only the sink is not empty: its weights are 0 for every token and its output is the zero sink value"
    only_sink, only_sink_w = run_with_weights(prop, only_case, hint, Q, K, V, np.full((T, T), -np.inf), sink=sink)
    contract_close(prop, only_case, only_sink, np.zeros((H, T, dv)), hint, atol=0, rtol=0)
    contract_close(prop, only_case, only_sink_w, np.zeros((H, T, T)), hint, atol=0, rtol=0)
    return {"output_max_error": error, "sink_max_error": sink_error, "per_head_sink": "PASS", "empty_rows": "PASS"}
