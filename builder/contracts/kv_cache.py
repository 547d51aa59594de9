"""Contract checks for KV-cache sizing and for the rolling buffer of sliding-window decoding."""

from .calls import contract_call, contract_parts
from .violations import ContractViolation, contract_assert, contract_close

__all__ = ["check_kv_cache_contract", "check_rolling_buffer_contract"]


def check_kv_cache_contract(kv_cache_bytes):
    """Judge ``kv_cache_bytes(context, layer_windows, kv_heads, head_dim, bytes_per_value=2)``.

    ``layer_windows`` holds one entry per layer: None for full attention, or the number of most
    recent tokens a windowed layer keeps. Returns a summary; raises ContractViolation on failure.
    """
    import numbers

    def expected(context, windows, kv_heads, head_dim, b=2):
        kept = sum(context if w is None else min(context, w) for w in windows)
        return 2 * kept * kv_heads * head_dim * b

    gpt_oss = [128 if layer % 2 == 0 else None for layer in range(36)]
    cases = [
        ("a full-attention layer keeps a key and a value per KV head for every token", 131072, [None] * 36, 8, 64, 2,
         "bytes = 2 (key and value) x tokens x KV heads x head_dim x bytes per value, summed over layers"),
        ("bytes_per_value scales the cache", 4096, [None] * 32, 8, 128, 1,
         "multiply by bytes_per_value instead of assuming 2 bytes"),
        ("a windowed layer keeps min(context, window) tokens", 100, [128] * 4, 8, 64, 2,
         "a short context does not fill the window: keep min(context, window) tokens, not window"),
        ("a windowed layer stops growing at its window", 131072, [128] * 4, 8, 64, 2,
         "beyond the window the oldest tokens are evicted: keep window tokens, not context"),
        ("each layer is sized by its own entry (gpt-oss: even layers windowed)", 131072, gpt_oss, 8, 64, 2,
         "sum over the layers; do not apply one layer's window to every layer"),
        ("mixed layers add up", 50, [None, 4, 16, 64, None], 2, 16, 2,
         "sum over the layers; a window larger than the context keeps the whole context"),
    ]
    for prop, context, windows, kv_heads, head_dim, b, hint in cases:
        case = f"context={context}, layer_windows={windows if len(windows) < 8 else f'{len(windows)} entries'}, kv_heads={kv_heads}, head_dim={head_dim}, bytes_per_value={b}"
        got = contract_call(prop, case, hint, kv_cache_bytes, context, windows, kv_heads, head_dim, bytes_per_value=b)
        want = expected(context, windows, kv_heads, head_dim, b)
        contract_assert(
            isinstance(got, numbers.Integral) and not isinstance(got, bool), "the size is an exact integer number of bytes", case,
            f"int {want}", f"{type(got).__name__} {got!r}", "use integer arithmetic (// not /); floats lose bytes above 2**53",
        )
        contract_assert(got == want, prop, case, f"{want} bytes", f"{got} bytes", hint)
    for bad in ((0, [None], 1, 1), (10, [], 1, 1), (10, [None, 0], 1, 1), (10, [None], 1.5, 1)):
        try:
            kv_cache_bytes(*bad)
        except (TypeError, ValueError):
            continue
        raise ContractViolation(
            "invalid sizes are rejected with TypeError or ValueError", f"kv_cache_bytes{bad}", "an error naming the argument",
            "returned normally", "keep the argument checks at the top of the function",
        )
    return {"cases": len(cases), "windows": "PASS", "exact_integers": "PASS"}


def check_rolling_buffer_contract(rolling_buffer_step):
    """Judge ``rolling_buffer_step(keys, values, t, q, k, v) -> (keys, values, output)``: one decode step.

    The buffer holds ``len(keys)`` slots (the window); token t overwrites slot t % window with k and v, touches no
    other slot, grows nothing, then attends over the min(t + 1, window) filled slots. The step sees only the buffer,
    so what it allocated and touched is read from the buffer it returns. Returns a summary.
    """
    import math

    import numpy as np

    def attend(keys, q, values):
        scores = keys @ q / math.sqrt(len(q))
        e = np.exp(scores - scores.max())
        return e @ values / e.sum()

    def step(case, keys, values, t, q, k, v, hint):
        prop = "a valid step gives (keys, values, output)"
        new_keys, new_values, output = contract_parts(prop, case, contract_call(
            prop, case, hint, rolling_buffer_step, keys.copy(), values.copy(), t, q, k, v), ("keys", "values", "output"))
        new_keys, new_values = np.asarray(new_keys, dtype=float), np.asarray(new_values, dtype=float)
        contract_assert(
            new_keys.shape == keys.shape and new_values.shape == values.shape, "the buffer never grows: it keeps its window of slots", case,
            f"keys {keys.shape}, values {values.shape}", f"keys {new_keys.shape}, values {new_values.shape}",
            "overwrite one slot in place; appending (np.vstack, np.concatenate) or keeping a list of every token is full attention's cache",
        )
        slot = t % len(keys)
        touched = sorted({int(i) for i in np.nonzero((new_keys != keys).any(axis=1) | (new_values != values).any(axis=1))[0]} - {slot})
        contract_assert(
            not touched and np.array_equal(new_keys[slot], k) and np.array_equal(new_values[slot], v),
            "token t writes its key and value into slot t % window and touches no other slot", case,
            f"slot {slot} = (k, v), every other slot as it was", f"slots changed: {sorted(set(touched) | {slot})}",
            "slot = t % len(keys): the slot of token t - window, which has just left the window; move nothing else",
        )
        return new_keys, new_values, output

    gen = np.random.default_rng(606)
    worst = 0.0
    # Steps on buffers the check fills itself: the step must read the buffer it is given, and only its filled slots.
    for window, t in ((1, 0), (1, 5), (3, 0), (3, 1), (4, 2), (4, 4), (4, 10), (5, 123)):
        keys, values = gen.standard_normal((window, 4)), gen.standard_normal((window, 3))
        keys[t + 1:], values[t + 1:] = 50.0, 1e6  # slots not yet filled hold stale data that must not be read
        q, k, v = gen.standard_normal(4), gen.standard_normal(4), gen.standard_normal(3)
        case = f"a {window}-slot buffer, token t={t}, d_k=4, d_v=3" + (" (slots after t hold stale data)" if t + 1 < window else "")
        new_keys, new_values, output = step(case, keys, values, t, q, k, v, "nothing here is invalid")
        held = min(t + 1, window)
        hint = ("attend over the filled slots only, keys[:min(t + 1, window)], after writing token t: a token reads its own key"
                if t + 1 < window else "softmax(keys @ q / sqrt(d_k)) @ values over every slot, after writing token t")
        worst = max(worst, contract_close(
            "token t attends over the filled slots of the buffer it was given, itself included", case, output,
            attend(new_keys[:held], q, new_values[:held]), hint,
        ))
    # Whole streams through the step: token t then reads exactly the last `window` tokens.
    n = 11
    Q, K, V = gen.standard_normal((n, 4)), gen.standard_normal((n, 4)), gen.standard_normal((n, 3))
    for window in (1, 3, 4, 11):
        keys, values = np.zeros((window, 4)), np.zeros((window, 3))
        case = f"11 tokens through a {window}-slot buffer, d_k=4, d_v=3"
        for t in range(n):
            keys, values, output = step(case + f", token {t}", keys, values, t, Q[t], K[t], V[t], "nothing here is invalid")
            first = max(0, t - window + 1)
            worst = max(worst, contract_close(
                "each token attends to exactly the last `window` tokens, itself included", case + f", token {t}", output,
                attend(K[first:t + 1], Q[t], V[first:t + 1]), "the buffer must hold tokens t - window + 1 .. t when token t attends; slot = t % window",
            ))
    # Scores of +1000 and -1000: exp(1000) overflows float64, so only a softmax shifted by its max survives.
    keys, values = np.array([[-1.0], [1.0]]), np.array([[2.0], [1.0]])
    prop, case = "scores of +-1000 give the same softmax as small ones, with no NaN", "q = 1000 (d_k=1), buffer keys (-1, 1), token t=2 with k = 1, v = 3"
    hint = "subtract the largest score before np.exp: exp(1000) is inf in float64, and inf / inf is NaN"
    new_keys, new_values, output = step(case, keys, values, 2, np.array([1000.0]), np.array([1.0]), np.array([3.0]), hint)
    contract_close(prop, case, output, attend(new_keys, np.array([1000.0]), new_values), hint)
    return {"max_error": worst, "slots_touched": "PASS", "buffer_never_grows": "PASS", "wide_scores": "PASS"}
