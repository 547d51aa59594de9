"""Module 5.1's functions that Module 5.2 reuses: the KV-cache sizes, the additive mask and softmax attention.

Module 5.1 derives each one in visible cells (three are its Exercises 1, 2 and 4), where they are its lesson,
mutated and fuzzed there; Module 5.2 calls them again. This file is their one source: 5.2 inlines every one,
5.1 inlines plot_masks (a hidden drawing cell), and tests/test_module5_1.py holds 5.1's cells to this text
letter for letter (solution markers and the in-body imports aside), so the two parts cannot drift apart.
"""

from .style import localized
from .validation import as_numpy, require_array, require_bool, require_budget, require_choice, require_int

__all__ = [
    "kv_bytes_per_token", "context_cost", "kv_cache_bytes", "mla_bytes_per_token",
    "make_mask", "plot_masks", "additive_mask", "_as_additive", "sdpa",
]


def kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_value=2):
    """KV-cache bytes one token costs: a key and a value per KV head, per layer."""
    for name, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim), ("bytes_per_value", bytes_per_value)):
        require_int(name, value, minimum=1)
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def context_cost(n, layers=32, kv_heads=8, head_dim=128, bytes_per_value=2):
    """Both bills of an n-token context: pairs scored per head per layer, and KV-cache bytes."""
    n = require_int("n", n, minimum=1)
    return {"n": n, "pairs": n * n, "cache_bytes": n * kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_value)}


def kv_cache_bytes(context, layer_windows, kv_heads, head_dim, bytes_per_value=2):
    """Exact KV-cache bytes for `context` tokens when each layer is full (None) or windowed (int)."""
    context = require_int("context", context, minimum=1)
    windows = list(layer_windows)
    if not windows:
        raise ValueError("layer_windows needs one entry per layer (None = full attention, int = window)")
    for layer, window in enumerate(windows):
        if window is not None:
            require_int(f"layer_windows[{layer}]", window, minimum=1)
    for name, value in (("kv_heads", kv_heads), ("head_dim", head_dim), ("bytes_per_value", bytes_per_value)):
        require_int(name, value, minimum=1)
    kept = sum(context if window is None else min(context, window) for window in windows)  # token slots over all layers
    return 2 * kept * kv_heads * head_dim * bytes_per_value  # a key and a value per KV head per kept token


def mla_bytes_per_token(layers, latent_dim, rope_dim, bytes_per_value=2):
    """Latent-cache bytes per token: one latent and one shared RoPE key per layer."""
    for name, value in (("layers", layers), ("latent_dim", latent_dim), ("rope_dim", rope_dim), ("bytes_per_value", bytes_per_value)):
        require_int(name, value, minimum=1)
    return layers * (latent_dim + rope_dim) * bytes_per_value


def make_mask(n, window=None, n_sink=0):
    """Additive causal mask [n, n]: 0.0 where query i may read key j, -inf elsewhere; optional window and sinks."""
    import numpy as np

    n = require_int("n", n, minimum=1)
    if window is not None:
        window = require_int("window", window, minimum=1)
    n_sink = require_int("n_sink", n_sink, minimum=0, maximum=n)
    if n_sink and window is None:
        raise ValueError("n_sink only matters with a window (without one every earlier key is visible); pass window=...")
    require_budget("the additive mask", (n, n))  # float64 entries, refused before anything is allocated
    query = np.arange(n)[:, None]  # (n, 1): rows are queries
    key = np.arange(n)[None, :]  # (1, n): columns are keys
    allowed = key <= query  # causal: never the future
    if window is not None:
        recent = query - key < window  # the query's own key is one of the window's w keys
        sinks = key < n_sink  # StreamingLLM: the first n_sink keys never leave
        allowed &= recent | sinks
    return np.where(allowed, 0.0, -np.inf)


def plot_masks(panels, language="en"):
    """One heatmap per (title, additive mask): dark where a query may read a key."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(panels), figsize=(min(2.6 * len(panels), 8.3), 2.7))  # at most 800 px: text shown at its size
    for ax, (title, mask) in zip(np.atleast_1d(axes), panels):
        ax.imshow(np.isfinite(mask), cmap="Blues", vmin=0, vmax=1.25, interpolation="nearest")
        ax.set_title(f"{title}\n{int(np.isfinite(mask).sum())} " + localized(language, "pairs", "пар"), fontsize=10)
        ax.set_xlabel(localized(language, "key j", "ключ j"))
        ax.set_xticks(range(0, len(mask), 5)), ax.set_yticks(range(0, len(mask), 5))
        ax.grid(False)
    np.atleast_1d(axes)[0].set_ylabel(localized(language, "query i", "запрос i"))
    fig.subplots_adjust(wspace=0.3, left=0.07, right=0.99, bottom=0.19, top=0.83)
    return fig


def additive_mask(allowed):
    """Turn a boolean mask (True = may read) into an additive one (0.0 / -inf)."""
    import numpy as np

    allowed = as_numpy("allowed", allowed)
    if allowed.dtype != bool:
        raise TypeError(f"allowed must be a boolean array (True = may read), got dtype {allowed.dtype}")
    return np.where(allowed, 0.0, -np.inf)


def _as_additive(mask, shape, dtype):
    """Validate an additive mask (finite biases and -inf) and broadcast it to ``shape``."""
    import numpy as np

    mask = as_numpy("mask", mask)
    if mask.dtype == bool:
        raise TypeError("mask is additive (0.0 = allowed, -inf = blocked); convert a boolean mask with additive_mask(allowed)")
    if mask.dtype.kind not in "iuf":
        raise TypeError(f"mask must hold real numbers, got dtype {mask.dtype}")
    mask = mask.astype(dtype, copy=False)
    if np.isnan(mask).any() or np.isposinf(mask).any():
        raise ValueError("mask may hold finite biases and -inf, but not NaN or +inf")
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to the scores' shape {shape}") from None


def sdpa(Q, K, V, mask=None, *, sink=None, empty_row="error", return_weights=False):
    """Softmax attention in NumPy with an additive mask, an optional sink logit and an empty-row policy.

    Q [..., T_q, d_k], K [..., T_k, d_k], V [..., T_k, d_v]; the mask broadcasts to [..., T_q, T_k]
    (0 or a finite bias = allowed, -inf = blocked); the sink broadcasts to [..., T_q, 1].
    Returns the output [..., T_q, d_v], and the token weights too when return_weights is True.
    """
    import math

    import numpy as np

    Q, K, V = require_array("Q", Q, min_ndim=2), require_array("K", K, min_ndim=2), require_array("V", V, min_ndim=2)
    require_choice("empty_row", empty_row, ("error", "zero"))
    return_weights = require_bool("return_weights", return_weights)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share d_k (last axis); got {Q.shape[-1]} and {K.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must hold the same number of keys (axis -2); got {K.shape[-2]} and {V.shape[-2]}")
    try:
        batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
        np.broadcast_shapes(batch, V.shape[:-2])
    except ValueError:
        raise ValueError(f"batch axes of Q {Q.shape}, K {K.shape} and V {V.shape} do not broadcast") from None
    dtype = np.result_type(Q.dtype, K.dtype, V.dtype, np.float32)  # float16 is computed in float32
    Q, K, V = (x.astype(dtype, copy=False) for x in (Q, K, V))
    shape = batch + (Q.shape[-2], K.shape[-2])  # (..., T_q, T_k)
    require_budget("the score matrix", shape, itemsize=dtype.itemsize)  # refused before Q @ K^T is formed
    if mask is not None:
        mask = _as_additive(mask, shape, dtype)
    if sink is not None:
        sink = require_array("sink", sink).astype(dtype, copy=False)
        try:
            sink = np.broadcast_to(sink, shape[:-1] + (1,))  # (..., T_q, 1): one logit per head and query
        except ValueError:
            raise ValueError(f"sink of shape {sink.shape} does not broadcast to {shape[:-1] + (1,)}; use shape (H, 1, 1) per head") from None
    with np.errstate(over="ignore", invalid="ignore"):
        scores = (Q @ np.swapaxes(K, -1, -2)) * dtype.type(1.0 / math.sqrt(Q.shape[-1]))  # (..., T_q, T_k)
        if not np.isfinite(scores).all():
            raise FloatingPointError("Q @ K^T overflowed; rescale Q and K (or compute in float64)")
        if mask is not None:
            biased = scores + mask
            if np.any(np.isfinite(mask) & ~np.isfinite(biased)):
                raise FloatingPointError("adding a finite mask bias overflowed the score; use a smaller bias (or -inf to block)")
            scores = biased
    has_key = np.isfinite(scores).any(axis=-1, keepdims=True)  # (..., T_q, 1)
    top = scores.max(axis=-1, keepdims=True)  # -inf on a row with nothing to read
    if sink is not None:
        top = np.maximum(top, sink)  # the sink competes inside the same softmax
    elif empty_row == "error" and not has_key.all():
        first = np.argwhere(~has_key[..., 0])[0].tolist()
        raise ValueError(
            f"{int((~has_key).sum())} query row(s) have no allowed key (first at index {first}); "
            "fix the mask, or pass empty_row='zero' to return zeros for them"
        )
    top = np.where(np.isfinite(top), top, 0.0)  # an empty row keeps a harmless max: no -inf - -inf
    exp_scores = np.exp(scores - top)  # blocked keys: exp(-inf) = 0
    denominator = exp_scores.sum(axis=-1, keepdims=True)
    if sink is not None:
        denominator = denominator + np.exp(sink - top)  # the sink's mass; its value vector is zero
    weights = np.divide(exp_scores, denominator, out=np.zeros_like(exp_scores), where=denominator > 0)
    output = weights @ V  # (..., T_q, d_v)
    return (output, weights) if return_weights else output
