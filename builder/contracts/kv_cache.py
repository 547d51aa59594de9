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


def check_rolling_buffer_contract(rolling_window_decode):
    """Judge ``rolling_window_decode(Q, K, V, window) -> (outputs, largest)``.

    Token t attends to the last ``window`` tokens (itself included) held in a buffer of ``window``
    slots; ``largest`` is the most keys the buffer ever held. Returns a summary.
    """
    import math
    import numbers

    import numpy as np

    def windowed(Q, K, V, window):
        scores = Q @ K.T / math.sqrt(Q.shape[1])
        distance = np.arange(len(Q))[:, None] - np.arange(len(K))[None, :]
        scores = np.where((distance >= 0) & (distance < window), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V

    gen = np.random.default_rng(606)
    n = 11
    Q, K, V = gen.standard_normal((n, 4)), gen.standard_normal((n, 4)), gen.standard_normal((n, 3))
    worst = 0.0
    for window in (1, 3, 4, 11, 20, 10**12):
        case = f"Q, K [11 tokens, d_k=4], V [11, 3], window={window:,}"
        prop = "any window of at least 1 is accepted"
        outputs, largest = contract_parts(prop, case, contract_call(
            prop, case, "a window longer than the sequence simply never fills: allocate min(window, T) slots, never `window` of them",
            rolling_window_decode, Q, K, V, window,
        ), ("outputs", "largest"))
        contract_assert(
            isinstance(largest, numbers.Integral) and largest == min(n, window), "the buffer never holds more than `window` keys", case,
            f"largest buffer {min(n, window)}", f"largest buffer {largest}",
            "a rolling buffer that keeps window + 1 keys: overwrite slot t % window before attending, not after",
        )
        worst = max(worst, contract_close(
            "each token attends to exactly the last `window` tokens, itself included", case, outputs, windowed(Q, K, V, window),
            "the buffer must hold tokens t - window + 1 .. t when token t attends; slot = t % window",
        ))
    prop, hint = "a window of 1 returns each token's own value", "with one slot the only key is the token itself, whose weight is 1"
    outputs, _ = contract_parts(prop, "window=1", contract_call(prop, "window=1", hint, rolling_window_decode, Q, K, V, 1), ("outputs", "largest"))
    contract_close(prop, "window=1", outputs, V, hint)
    # Scores of +1000 and -1000: exp(1000) overflows float64, so only a softmax shifted by its row's max survives.
    Q_wide, K_wide, V_wide = np.full((3, 1), 1000.0), np.array([[1.0], [-1.0], [1.0]]), np.array([[1.0], [2.0], [3.0]])
    prop, case = "scores of +-1000 give the same softmax as small ones, with no NaN", "Q = 1000 [3 tokens, d_k=1], K = (1, -1, 1), V = (1, 2, 3), window=2"
    hint = "subtract each row's largest score before np.exp: exp(1000) is inf in float64, and inf / inf is NaN"
    outputs, _ = contract_parts(prop, case, contract_call(prop, case, hint, rolling_window_decode, Q_wide, K_wide, V_wide, 2), ("outputs", "largest"))
    contract_close(prop, case, outputs, windowed(Q_wide, K_wide, V_wide, 2), hint)
    return {"max_error": worst, "largest_buffer": "PASS", "wide_scores": "PASS"}
