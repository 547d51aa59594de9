"""Contract checks for exact streaming attention: the online softmax and tiled (FlashAttention-style) attention."""

from .calls import contract_call, contract_parts
from .violations import ContractViolation, contract_assert, contract_close

__all__ = [
    "check_online_softmax_contract",
    "check_plain_tiled_contract",
    "check_causal_tiled_contract",
    "check_tiled_attention_contract",
    "check_tiled_backward_contract",
]


def check_online_softmax_contract(online_softmax_dot):
    """Judge ``online_softmax_dot(logit_tiles, value_tiles) -> (output, trace)``.

    ``trace`` has one dict per tile with the running max ``m``, the rescale factor ``alpha`` applied
    to the old sums, the running sum ``l`` and the running numerator ``n``. Returns a summary.
    """
    import math

    import numpy as np

    def direct(logits, values):
        top = max(logits)
        e = [math.exp(x - top) for x in logits]
        return math.fsum(w * v for w, v in zip(e, values)) / math.fsum(e)

    def run(prop, case, hint, *args):
        return contract_parts(prop, case, contract_call(prop, case, hint, online_softmax_dot, *args), ("output", "trace"))

    case = "logit tiles [[2, 1], [3, 0.5]], value tiles [[1, 2], [3, 4]]"
    output, trace = run("valid tiles give (output, trace)", case, "return the output and the list of per-tile dicts",
                        [[2.0, 1.0], [3.0, 0.5]], [[1.0, 2.0], [3.0, 4.0]])
    contract_assert(
        isinstance(trace, (list, tuple)) and len(trace) == 2 and all(isinstance(t, dict) for t in trace), "the trace has one dict per tile", case,
        "2 dicts with keys m, alpha, l, u", f"{trace!r}"[:120], "append {'m': ..., 'alpha': ..., 'l': ..., 'u': ...} after each tile",
    )
    e = math.exp
    expected = [
        {"m": 2.0, "alpha": 0.0, "l": 1.0 + e(-1.0), "u": 1.0 + 2.0 * e(-1.0)},
        {"m": 3.0, "alpha": e(-1.0), "l": e(-1.0) * (1.0 + e(-1.0)) + 1.0 + e(-2.5),
         "u": e(-1.0) * (1.0 + 2.0 * e(-1.0)) + 3.0 + 4.0 * e(-2.5)},
    ]
    hints = {
        "m": "the running max is the max of the old max and this tile's max",
        "alpha": "alpha = exp(m_old - m_new); before any tile m_old = -inf, so the first alpha is 0",
        "l": "online softmax without the alpha rescale: multiply the old running sum by alpha before adding the tile's exp(x - m_new)",
        "u": "multiply the old numerator by alpha as well, then add sum(exp(x - m_new) * v)",
    }
    for tile, (want, got) in enumerate(zip(expected, trace)):
        for key in ("m", "alpha", "l", "u"):
            contract_close(
                f"after tile {tile + 1} the running '{key}' is exact", case, [got.get(key, math.nan)], [want[key]], hints[key],
                atol=1e-12, rtol=1e-12,
            )
    contract_close(
        "the output is n / l and equals the direct softmax average", case, [output], [direct([2.0, 1.0, 3.0, 0.5], [1.0, 2.0, 3.0, 4.0])],
        "divide the final numerator by the final running sum", atol=1e-12, rtol=1e-12,
    )

    gen = np.random.default_rng(9)
    for sizes in ((1, 1, 1), (3, 1, 4), (2, 5), (6,), (1, 2, 3, 4)):
        logits = gen.normal(0.0, 3.0, sum(sizes)).tolist()
        values = gen.normal(0.0, 1.0, sum(sizes)).tolist()
        tiles, tile_values, start = [], [], 0
        for size in sizes:
            tiles.append(logits[start:start + size])
            tile_values.append(values[start:start + size])
            start += size
        prop, case = "any split into tiles gives the direct softmax average", f"random logits split into tiles of sizes {sizes}"
        hint = "the rescale must use the max over everything seen so far, in any order"
        got, _ = run(prop, case, hint, tiles, tile_values)
        contract_close(prop, case, [got], [direct(logits, values)], hint, atol=1e-12, rtol=1e-12)
    prop, case, hint = "logits near 1000 stay finite", "logit tiles [[1000, 999], [998]]", "subtract the running max inside exp; exp(1000) overflows"
    got, _ = run(prop, case, hint, [[1000.0, 999.0], [998.0]], [[1.0, 2.0], [3.0]])
    contract_close(prop, case, [got], [direct([1000.0, 999.0, 998.0], [1.0, 2.0, 3.0])], hint, atol=1e-12, rtol=1e-12)
    prop, case = "logits near -1000 stay finite", "logit tiles [[-1000], [-1001, -999]]"
    hint = "start the running max at -inf, not 0: exp(-1000 - 0) underflows to 0 and the output becomes 0/0"
    got, _ = run(prop, case, hint, [[-1000.0], [-1001.0, -999.0]], [[1.0], [2.0, 3.0]])
    contract_close(prop, case, [got], [direct([-1000.0, -1001.0, -999.0], [1.0, 2.0, 3.0])], hint, atol=1e-12, rtol=1e-12)
    return {"trace": "PASS", "random_tilings": 5, "extreme_logits": "PASS"}


def check_plain_tiled_contract(tiled_attention_plain):
    """Judge ``tiled_attention_plain(Q, K, V, *, tile_size) -> output``: unmasked softmax attention in tiles.

    The output must equal dense float64 softmax attention for every tile size, stay finite for logits
    far beyond exp's range, leave its inputs alone and never hold a T_q x T_k score matrix.
    """
    import math
    import tracemalloc

    import numpy as np

    def dense(Q, K, V):
        scores = Q @ K.T / math.sqrt(Q.shape[1])
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V

    gen = np.random.default_rng(606)
    Q, K, V = gen.standard_normal((7, 4)), gen.standard_normal((10, 4)), gen.standard_normal((10, 3))
    case = "Q [7, d_k=4], K [10, 4], V [10, 3], float64"
    copies = [x.copy() for x in (Q, K, V)]
    worst = 0.0
    for tile in (1, 3, 4, 10, 64):
        got = contract_call("plain tiles run", f"{case}, tile_size={tile}", "nothing here is invalid",
                            tiled_attention_plain, Q, K, V, tile_size=tile)
        worst = max(worst, contract_close(
            "plain tiled output equals dense softmax attention for any tile size", f"{case}, tile_size={tile}", got, dense(Q, K, V),
            "when a key tile raises a row's max, multiply that row's running sum and accumulator by alpha = exp(m_old - m_new)",
        ))
    contract_assert(
        all(np.array_equal(a, b) for a, b in zip(copies, (Q, K, V))), "the inputs are left unchanged", f"{case}, after every call",
        "Q, K and V as given", "one of them was modified in place", "scale a copy (Q * scale), never Q itself",
    )
    huge = 300.0 * Q  # scores near 1,000: exp overflows unless the running max is subtracted first
    got = contract_call("logits far beyond exp's range run", f"{case}, Q times 300, tile_size=3", "nothing here is invalid",
                        tiled_attention_plain, huge, K, V, tile_size=3)
    contract_close(
        "large logits stay finite and exact (the running max is subtracted before exp)", f"{case}, Q times 300, tile_size=3",
        got, dense(huge, K, V), "subtract the running max m from the scores before exp, and rescale the old sums by exp(m_old - m_new)",
        atol=1e-9, rtol=1e-9,
    )
    big = 384
    Qb, Kb, Vb = gen.standard_normal((big, 8)), gen.standard_normal((big, 8)), gen.standard_normal((big, 8))
    tracemalloc.start()
    try:
        contract_call("a long input runs", f"{big} tokens, d=8, tile_size=32", "nothing here is invalid",
                      tiled_attention_plain, Qb, Kb, Vb, tile_size=32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    contract_assert(
        peak < big * big * 8 // 2, "plain tiled attention never holds a T_q x T_k score matrix", f"{big} tokens, d=8, tile_size=32",
        f"peak traced memory below half of one {big} x {big} float64 matrix ({big * big * 4} bytes)", f"{peak} bytes",
        "compute one (query block, key block) score tile at a time; keep only m, l and the accumulator per query block",
    )
    return {"max_error": worst, "large_logits": "PASS", "memory": "PASS"}


def check_causal_tiled_contract(causal_tiled_attention):
    """Judge ``causal_tiled_attention(Q, K, V, *, tile_size) -> (output, tiles_computed)``.

    Query i reads keys 0..i. The output must equal dense causal attention; the tiles skipped are judged by
    what the code read, not by the count it reports: keys after the last query are unwritten cache slots
    holding NaN, which any tile above the diagonal (or dense attention, 0 x NaN = NaN) turns into NaN; and
    the peak memory of a long input stays below one T x T score matrix.
    """
    import math
    import tracemalloc

    import numpy as np

    def dense_causal(Q, K, V):
        scores = Q @ K.T / math.sqrt(Q.shape[1])
        scores = np.where(np.tri(len(Q), len(K), dtype=bool), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V

    def needed(n, tile):
        starts = range(0, n, tile)
        return sum(1 for q0 in starts for k0 in starts if k0 <= min(q0 + tile, n) - 1)

    def run(where, *args, prop="causal tiles run", hint="nothing here is invalid", **kwargs):
        return contract_parts("causal tiles give (output, tiles_computed)", where, contract_call(
            prop, where, hint, causal_tiled_attention, *args, **kwargs,
        ), ("output", "tiles_computed"))

    gen = np.random.default_rng(707)
    n = 11
    Q, K, V = gen.standard_normal((n, 4)), gen.standard_normal((n, 4)), gen.standard_normal((n, 3))
    case = "Q, K [11 tokens, d_k=4], V [11, 3], float64"
    worst = 0.0
    for tile in (1, 3, 4, 64):
        where = f"{case}, tile_size={tile}"
        output, tiles = run(where, Q, K, V, tile_size=tile)
        worst = max(worst, contract_close(
            "causal tiled output equals dense causal attention: query i reads keys 0..i", where, output, dense_causal(Q, K, V),
            "inside a diagonal tile, block key > query with -inf before the max; never skip a tile that holds an allowed key",
        ))
        expected = needed(n, tile)
        contract_assert(
            int(tiles) == expected, "only the key tiles on or below the block diagonal are computed", where,
            f"{expected} score tiles", f"{tiles} score tiles",
            "for the query block [q0, q1), visit key tiles starting at k0 <= q1 - 1 only; later tiles are all in the future",
        )
    unwritten = np.full((8, 4), np.nan)  # a preallocated cache: slots 8..15 not written yet
    K_cache, V_cache = np.concatenate([K[:8], unwritten]), np.concatenate([V[:8], unwritten[:, :3]])
    where = "Q [8 tokens, d_k=4], K and V [16 slots] whose slots 8..15 are unwritten (NaN), tile_size=4"
    prop = "no key tile above the block diagonal is read (its keys lie in the future)"
    hint = ("the future tiles were computed: dense attention, or a loop over every key tile, multiplies their NaN values by weight 0 "
            "(0 x NaN = NaN); visit key tiles k0 <= q1 - 1 only, and count the tiles you computed, not a formula")
    output, _ = run(where, Q[:8], K_cache, V_cache, tile_size=4, prop=prop, hint=hint)
    contract_close(prop, where, output, dense_causal(Q[:8], K[:8], V[:8]), hint)
    big = 384
    Qb, Kb, Vb = gen.standard_normal((big, 8)), gen.standard_normal((big, 8)), gen.standard_normal((big, 8))
    where = f"{big} tokens, d=8, tile_size=32"
    tracemalloc.start()
    try:
        run(where, Qb, Kb, Vb, tile_size=32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    contract_assert(
        peak < big * big * 8 // 2, "causal tiled attention never holds a T_q x T_k score matrix", where,
        f"peak traced memory below half of one {big} x {big} float64 matrix ({big * big * 4} bytes)", f"{peak} bytes",
        "a dense causal softmax over the keys read is not tiling: compute one (query block, key block) tile at a time",
    )
    return {"max_error": worst, "tiles_2048_128": needed(2048, 128), "unwritten_slots": "never read", "memory": "PASS"}


def check_tiled_attention_contract(tiled_attention):
    """Judge ``tiled_attention(Q, K, V, mask=None, *, tile_size, sink, empty_row, causal, window, query_start)``.

    Every result must equal dense float64 softmax attention with the same mask, window, sink and
    query positions, without ever holding a T_q x T_k score matrix. Returns a summary.
    """
    import math
    import tracemalloc

    import numpy as np

    def dense(Q, K, V, allowed=None, bias=None, sink=None):
        scores = np.asarray(Q, dtype=float) @ np.asarray(K, dtype=float).T / math.sqrt(Q.shape[1])
        if bias is not None:
            scores = scores + bias
        if allowed is not None:
            scores = np.where(allowed, scores, -np.inf)
        extended = scores if sink is None else np.concatenate([scores, np.full((len(Q), 1), float(sink))], axis=1)
        top = extended.max(axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.exp(extended - top)
        total = e.sum(axis=1, keepdims=True)
        weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)[:, : len(K)]
        return weights @ np.asarray(V, dtype=float)

    def positions(n_queries, n_keys, start, window):
        distance = (start + np.arange(n_queries))[:, None] - np.arange(n_keys)[None, :]
        allowed = distance >= 0
        if window is not None:
            allowed = allowed & (distance < window)
        return allowed

    def judge(prop, case, hint, expected, *args, atol=1e-12, **kwargs):
        got = contract_call(prop, case, hint, tiled_attention, *args, **kwargs)
        return contract_close(prop, case, got, expected, hint, atol=atol, rtol=1e-12)

    gen = np.random.default_rng(808)
    n, d, dv = 11, 4, 3
    Q, K, V = gen.standard_normal((n, d)), gen.standard_normal((n, d)), gen.standard_normal((n, dv))
    case = "Q, K [11 tokens, d_k=4], V [11, 3], float64"

    worst = 0.0
    for tile in (1, 3, 4, 64):
        worst = max(worst, judge(
            "tiled output equals dense softmax attention for any tile size", f"{case}, no mask, tile_size={tile}",
            "rescale the accumulator and the running sum by alpha = exp(m_old - m_new) when a tile raises the row max",
            dense(Q, K, V), Q, K, V, tile_size=tile,
        ))
    late = np.full((2, n), -np.inf)
    late[:, -1] = 0.0
    judge(
        "tiles with no allowed key are skipped without NaN", f"{case}, 2 queries whose only allowed key is the last, tile_size=2",
        "an all -inf tile gives exp(-inf - -inf) = NaN; skip it or use a safe max of 0",
        np.repeat(V[-1:], 2, axis=0), Q[:2], K, V, late, tile_size=2,
    )
    for tile in (1, 3, 4, 64):
        worst = max(worst, judge(
            "causal=True: query i reads keys 0..i", f"{case}, causal=True, tile_size={tile}",
            "a key is allowed when key <= query; blocks entirely above the diagonal are skipped, partial ones masked",
            dense(Q, K, V, positions(n, n, 0, None)), Q, K, V, tile_size=tile, causal=True,
        ))
    for tile in (1, 3, 4, 64):
        worst = max(worst, judge(
            "window=w keeps the last w keys, the query's own included", f"{case}, causal=True, window=3, tile_size={tile}",
            "off by one: allow query - key < window (not <= window), and do not skip a block that still holds an allowed key",
            dense(Q, K, V, positions(n, n, 0, 3)), Q, K, V, tile_size=tile, causal=True, window=3,
        ))
    bias = np.where(gen.random((n, n)) < 0.3, -np.inf, gen.normal(0.0, 1.0, (n, n)))
    np.fill_diagonal(bias, 0.0)
    judge(
        "an additive mask (finite biases and -inf) is added tile by tile", f"{case}, random additive mask, tile_size=3",
        "slice the mask with the same query and key ranges as the scores of the block",
        dense(Q, K, V, bias=bias), Q, K, V, bias, tile_size=3,
    )
    for start, window in ((5, None), (5, 3), (8, 2)):
        rows = slice(start, n)
        judge(
            "query_start places the first query at that absolute position (a cached prefix)",
            f"{case}, queries {start}..{n - 1} against all {n} keys, causal=True, window={window}, query_start={start}",
            "query offset ignored: query i sits at position query_start + i, so compare keys with query_start + i",
            dense(Q, K, V, positions(n, n, 0, window))[rows], Q[rows], K, V, tile_size=3, causal=True, window=window, query_start=start,
        )
    prop, decode_case = "decoding one query at a time equals attending all at once", f"{case}, 11 single-query steps, window=4"
    hint = "each decode step sees the keys cached so far; its query sits at position t"
    steps = [
        contract_call(prop, decode_case, hint, tiled_attention, Q[t:t + 1], K[: t + 1], V[: t + 1], tile_size=2, causal=True, window=4, query_start=t)
        for t in range(n)
    ]
    contract_close(prop, decode_case, np.concatenate(steps), dense(Q, K, V, positions(n, n, 0, 4)), hint)
    empty = np.zeros((n, n))
    empty[4] = -np.inf
    try:
        tiled_attention(Q, K, V, empty, tile_size=3)
    except ValueError:
        pass
    else:
        raise ContractViolation(
            "a fully masked row raises ValueError by default", f"{case}, row 4 fully masked", "ValueError", "returned normally",
            "after the last tile, a row whose running sum is 0 had no key at all",
        )
    judge(
        "empty_row='zero' gives an exact zero row and leaves the others alone", f"{case}, row 4 fully masked, empty_row='zero'",
        "NaN on a fully masked row: divide only where the running sum is positive",
        dense(Q, K, V, bias=empty), Q, K, V, empty, tile_size=3, empty_row="zero",
    )
    judge(
        "a sink joins the denominator with a zero value", f"{case}, causal=True, sink=0.7, tile_size=3",
        "start each row with m = sink and l = 1 (the sink's exp(sink - m)), and the accumulator at 0",
        dense(Q, K, V, positions(n, n, 0, None), sink=0.7), Q, K, V, tile_size=3, causal=True, sink=0.7,
    )
    Q16, K16, V16 = (x.astype(np.float16) for x in (Q, K, V))
    half_case = f"{case} cast to float16, causal=True"
    half = contract_call(
        "float16 inputs are accepted", half_case, "promote to float32 before any arithmetic", tiled_attention,
        Q16, K16, V16, tile_size=3, causal=True,
    )
    contract_assert(
        np.asarray(half).dtype == np.float32, "float16 inputs are accumulated and returned in float32", half_case,
        "dtype float32", f"dtype {np.asarray(half).dtype}",
        "promote with np.result_type(Q.dtype, K.dtype, V.dtype, np.float32) before any arithmetic",
    )
    contract_close(
        "float16 inputs give the float32 result", half_case, half, dense(Q16, K16, V16, positions(n, n, 0, None)),
        "accumulate in float32, never in float16", atol=2e-6, rtol=0,
    )
    f32_max = float(np.finfo(np.float32).max)
    q_over = np.array([[math.sqrt(0.75 * f32_max)]], dtype=np.float32)
    for sign in (1.0, -1.0):
        try:
            tiled_attention(q_over, sign * q_over, np.ones((1, 1), np.float32), np.array([[sign * 0.75 * f32_max]], np.float32))
        except FloatingPointError as exc:
            contract_assert(
                bool(str(exc).strip()), "an overflowing finite bias is rejected with a message that says what overflowed",
                f"score {sign * 0.75:+} * float32 max plus a bias of the same sign", "a non-empty message",
                repr(str(exc)), "say what overflowed so the reader knows to shrink the bias",
            )
        else:
            raise ContractViolation(
                "an overflowing finite bias is rejected", f"score {sign * 0.75:+} * float32 max plus a bias of the same sign",
                "FloatingPointError", "returned normally", "score + bias overflowed to +-inf; -inf would silently read as 'blocked'",
            )

    big = 384
    Qb, Kb, Vb = gen.standard_normal((big, 8)), gen.standard_normal((big, 8)), gen.standard_normal((big, 8))
    tracemalloc.start()
    try:
        contract_call(
            "a long causal input runs", f"{big} tokens, d=8, tile_size=32", "nothing here is invalid",
            tiled_attention, Qb, Kb, Vb, tile_size=32, causal=True,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    score_matrix = big * big * 8
    contract_assert(
        peak < score_matrix // 2, "tiled attention never holds a T_q x T_k score matrix", f"{big} tokens, d=8, tile_size=32",
        f"peak traced memory below half of one {big} x {big} float64 matrix ({score_matrix // 2} bytes)", f"{peak} bytes",
        "compute scores one (query block, key block) pair at a time and keep only the running max, sum and accumulator",
    )
    return {"max_error": worst, "offsets": "PASS", "empty_rows": "PASS", "float16": "PASS", "memory": "PASS"}


def check_tiled_backward_contract(tiled_attention_backward):
    """Judge ``tiled_attention_backward(Q, K, V, O, dO, lse, *, tile_size, causal) -> (dQ, dK, dV)``.

    The gradients must equal autograd's on the dense path in float64 (to 1e-10), be computed from the saved
    output and log-sum-exp (a shifted lse must scale them as FlashAttention-2's formulas say), without autograd,
    and with a peak memory below one T x T score matrix.
    """
    import contextlib
    import math
    import tracemalloc

    import numpy as np
    import torch

    def dense(Q, K, V, dO, causal):
        q, k, v = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (Q, K, V))
        s = q @ k.T / math.sqrt(Q.shape[1])
        if causal:
            s = s.masked_fill(~torch.ones(len(Q), len(K), dtype=torch.bool).tril(), float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        o.backward(torch.tensor(dO, dtype=torch.float64))
        lse = torch.logsumexp(s, dim=-1)
        return o.detach().numpy(), lse.detach().numpy(), [x.grad.numpy() for x in (q, k, v)]

    class AutogradRefused(RuntimeError):
        """Raised when the code under judgement calls autograd, which is this check's oracle."""

    @contextlib.contextmanager
    def no_autograd():
        def refused(*args, **kwargs):
            raise AutogradRefused("autograd is the oracle of this check: write the backward pass yourself, tile by tile")
        saved = torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward
        torch.autograd.backward = torch.autograd.grad = torch.Tensor.backward = refused
        try:
            yield
        finally:
            torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward = saved

    hints = {
        "dQ": "dS = P * (dP - D) with dP = dO V^T and D = rowsum(dO * O); then dQ += dS K / sqrt(d_k)",
        "dK": "dK += dS^T Q / sqrt(d_k): the 1 / sqrt(d_k) of the scores appears in dQ and in dK",
        "dV": "dV += P^T dO, with P = exp(S - lse) recomputed from the score tile and the saved log-sum-exp",
    }

    def run(prop, case, hint, *args, **kwargs):
        try:
            with no_autograd():
                result = contract_call(prop, case, hint, tiled_attention_backward, *args, **kwargs)
        except ContractViolation as violation:
            if isinstance(violation.__cause__, AutogradRefused):
                raise ContractViolation(
                    "the backward pass is written by hand: autograd is never called", case, "no call to torch's autograd",
                    "a call to torch.autograd (backward or grad)", "compute dS = P * (dP - D) and the three products yourself, tile by tile",
                ) from None
            raise
        return contract_parts(prop, case, result, ("dQ", "dK", "dV"))

    gen = np.random.default_rng(909)
    n, d, dv = 11, 4, 3
    Q, K, V, dO = gen.standard_normal((n, d)), gen.standard_normal((n, d)), gen.standard_normal((n, dv)), gen.standard_normal((n, dv))
    worst = 0.0
    for causal in (False, True):
        O, lse, expected = dense(Q, K, V, dO, causal)
        for tile in (1, 3, 4, 64):
            case = f"Q, K [11 tokens, d_k=4], V and dO [11, 3], float64, causal={causal}, tile_size={tile}"
            got = run("the tiled backward pass runs", case, "nothing here is invalid", Q, K, V, O, dO, lse, tile_size=tile, causal=causal)
            for name, g, want in zip(("dQ", "dK", "dV"), got, expected):
                worst = max(worst, contract_close(
                    f"{name} equals autograd's on dense attention (float64, 1e-10)", case, g, want, hints[name], atol=1e-10, rtol=1e-10,
                ))
    O, lse, expected = dense(Q, K, V, dO, True)
    case = "the causal case above with tile_size=4, and the saved lse shifted by log 2 (so P = exp(S - lse) halves)"
    got = run("the backward pass reads the saved log-sum-exp", case, "nothing here is invalid", Q, K, V, O, dO, lse + math.log(2.0), tile_size=4, causal=True)
    for name, g, want in zip(("dQ", "dK", "dV"), got, expected):
        contract_close(
            f"{name} is computed from the saved lse and O: a shifted lse halves it", case, g, want / 2, "recompute P = exp(S - lse) "
            "from the lse you are given and take D = rowsum(dO * O) from the saved output; renormalising the rows yourself "
            "needs each whole row of P, which tiling never holds", atol=1e-10, rtol=1e-10,
        )
    big = 384
    Qb, Kb, Vb, dOb = (gen.standard_normal((big, 8)) for _ in range(4))
    Ob, lseb, _ = dense(Qb, Kb, Vb, dOb, True)
    where = f"{big} tokens, d=8, causal, tile_size=32"
    tracemalloc.start()
    try:
        run("a long input runs", where, "nothing here is invalid", Qb, Kb, Vb, Ob, dOb, lseb, tile_size=32, causal=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    contract_assert(
        peak < big * big * 8 // 2, "the backward pass never holds a T_q x T_k matrix (scores, P or dS)", where,
        f"peak traced memory below half of one {big} x {big} float64 matrix ({big * big * 4} bytes)", f"{peak} bytes",
        "recompute one (key block, query block) score tile at a time; keep only dQ, dK, dV and D = rowsum(dO * O)",
    )
    return {"max_error": worst, "uses_saved_lse": "PASS", "no_autograd": "PASS", "memory": "PASS"}
