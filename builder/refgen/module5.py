"""Reference metrics of Module 5, "Modern Attention Mechanisms", recomputed from their definitions."""

import math

SCHEMA_VERSION = 2
CONTEXT = 131_072


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: int = 2) -> int:
    """A key and a value per KV head, per layer."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def kv_rows() -> dict:
    """gpt-oss-120b's cache per token if every layer were full, and its MHA and MQA variants."""
    return {
        "gpt_oss_gqa_all_full_equivalent": kv_bytes_per_token(36, 8, 64),
        "gpt_oss_mha_hypothetical": kv_bytes_per_token(36, 64, 64),
        "gpt_oss_mqa_hypothetical": kv_bytes_per_token(36, 1, 64),
    }


def gpt_oss_hybrid() -> dict:
    """18 full layers grow with the context; 18 windowed layers hold at most 128 tokens."""
    layers, full_layers, window = 36, 18, 128
    per_layer = kv_bytes_per_token(1, 8, 64)
    full = full_layers * CONTEXT * per_layer
    sliding = (layers - full_layers) * window * per_layer
    return {
        "all_full_bytes": layers * CONTEXT * per_layer,
        "full_bytes": full,
        "full_layers": full_layers,
        "hybrid_total_bytes": full + sliding,
        "layers": layers,
        "per_layer_bytes_per_token": per_layer,
        "sliding_bytes": sliding,
        "sliding_layers": layers - full_layers,
        "window": window,
    }


def online_softmax_trace() -> dict:
    """Two tiles of logits [2, 1] and [3, 0.5] over values [1, 2] and [3, 4], streamed exactly.

    Each quantity is the correctly rounded value of its closed form: the running max after
    tile 2 is 3, so the tile-1 terms carry the factor alpha = e^(2 - 3).
    """
    e = math.exp
    l1 = math.fsum([e(0.0), e(-1.0)])
    n1 = math.fsum([e(0.0) * 1.0, e(-1.0) * 2.0])
    alpha = e(2.0 - 3.0)
    l2 = math.fsum([e(-1.0), e(-2.0), e(0.0), e(-2.5)])
    n2 = math.fsum([e(-1.0) * 1.0, e(-2.0) * 2.0, e(0.0) * 3.0, e(-2.5) * 4.0])
    return {"alpha": alpha, "l1": l1, "l2": l2, "n1": n1, "n2": n2, "output": n2 / l2}


def mla() -> dict:
    """DeepSeek-V3 latent cache (512 latent + 64 RoPE numbers, 61 layers, 16-bit) against the
    DeepSeek-V2 paper's MHA-equivalent convention (128 heads, d_h = 128 for keys and values)."""
    latent = (512 + 64) * 61 * 2
    mha_equivalent = 2 * 61 * 128 * 128 * 2
    return {"bytes_per_token": latent, "mha_equivalent_bytes_per_token": mha_equivalent, "raw_element_ratio": mha_equivalent / latent}


def score_matrix() -> dict:
    """Bytes of one fp32 score matrix, n x n, and of one 128 x 128 tile."""
    return {
        "n_4096_fp32_bytes": 4096 * 4096 * 4,
        "n_8192_fp32_bytes": 8192 * 8192 * 4,
        "tile_128_fp32_bytes": 128 * 128 * 4,
    }


def generate() -> dict:
    """Every Module 5 reference value."""
    return {
        "context_tokens": CONTEXT,
        "gpt_oss_hybrid": gpt_oss_hybrid(),
        "kv_rows": kv_rows(),
        "mla": mla(),
        "online_softmax_trace": online_softmax_trace(),
        "schema_version": SCHEMA_VERSION,
        "score_matrix": score_matrix(),
    }
