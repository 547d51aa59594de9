"""Reference metrics of Module 5.1, "Exact Attention at Scale", recomputed from their definitions."""

import math

SCHEMA_VERSION = 4
CONTEXT = 131_072


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: int = 2) -> int:
    """A key and a value per KV head, per layer."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def kv_rows() -> dict:
    """gpt-oss-120b's cache per token if every layer were full, and its MHA and MQA variants on the real schedule (18 full layers grow)."""
    return {
        "gpt_oss_gqa_all_full_equivalent": kv_bytes_per_token(36, 8, 64),
        "gpt_oss_mha_hypothetical": kv_bytes_per_token(18, 64, 64),
        "gpt_oss_mqa_hypothetical": kv_bytes_per_token(18, 1, 64),
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
    u1 = math.fsum([e(0.0) * 1.0, e(-1.0) * 2.0])
    alpha = e(2.0 - 3.0)
    l2 = math.fsum([e(-1.0), e(-2.0), e(0.0), e(-2.5)])
    u2 = math.fsum([e(-1.0) * 1.0, e(-2.0) * 2.0, e(0.0) * 3.0, e(-2.5) * 4.0])
    return {"alpha": alpha, "l1": l1, "l2": l2, "output": u2 / l2, "u1": u1, "u2": u2}


def mla() -> dict:
    """DeepSeek-V3 latent cache (512 latent + 64 RoPE numbers, 61 layers, 16-bit) against the
    DeepSeek-V2 paper's MHA-equivalent convention (128 heads, d_h = 128 for keys and values),
    and (schema 3) against the real expanded widths: 192-wide keys, 128-wide values."""
    latent = (512 + 64) * 61 * 2
    mha_equivalent = 2 * 61 * 128 * 128 * 2
    expanded = 61 * 128 * ((128 + 64) + 128) * 2
    return {
        "bytes_per_token": latent,
        "expanded_192_bytes_per_token": expanded,
        "expanded_192_ratio": expanded / latent,
        "mha_equivalent_bytes_per_token": mha_equivalent,
        "raw_element_ratio": mha_equivalent / latent,
    }


def score_matrix() -> dict:
    """Bytes of one fp32 score matrix, n x n, and of one 128 x 128 tile."""
    return {
        "n_4096_fp32_bytes": 4096 * 4096 * 4,
        "n_8192_fp32_bytes": 8192 * 8192 * 4,
        "tile_128_fp32_bytes": 128 * 128 * 4,
    }


# ---- Added in schema 3: the long-context lesson's worked numbers and the model-card rows. ----

RUNNING = {"layers": 32, "kv_heads": 8, "head_dim": 128}  # Llama-3-8B's attention shape, 16-bit cache


def running_example() -> dict:
    """Bytes one token costs in the running example."""
    return {"bytes_per_token": kv_bytes_per_token(RUNNING["layers"], RUNNING["kv_heads"], RUNNING["head_dim"])}


def two_bills() -> dict:
    """Pairs per head per layer (n^2) and KV bytes at 8k, 128k and 1M tokens."""
    contexts = [8_192, 131_072, 1_048_576]
    per_token = running_example()["bytes_per_token"]
    return {"cache_bytes": [n * per_token for n in contexts], "contexts": contexts, "pairs": [n * n for n in contexts]}


def sink_share() -> dict:
    """Share of a row's probability taken by a sink logit against 128 keys that all score 0."""
    return {f"logit_{s}": math.exp(s) / math.fsum([128.0, math.exp(s)]) for s in (0, 2, 5)}


def model_cards() -> dict:
    """gpt-oss-20b's growing part (12 full layers), Llama-3.3-70B and Qwen2.5-7B at 131,072 tokens."""
    llama, qwen = kv_bytes_per_token(80, 8, 128), kv_bytes_per_token(28, 4, 128)
    return {
        "gpt_oss_20b_growing_bytes_per_token": kv_bytes_per_token(12, 8, 64),
        "llama_3_3_70b_bytes_per_token": llama,
        "llama_3_3_70b_context_bytes": llama * CONTEXT,
        "qwen2_5_7b_bytes_per_token": qwen,
        "qwen2_5_7b_context_bytes": qwen * CONTEXT,
    }


def tiled() -> dict:
    """Block pairs tiled attention computes for n = 2048, tile 128: causal, and causal with a 256 window.

    A key block is visited when it holds at least one key that some query of the block may read.
    """
    n, tile, window = 2048, 128, 256
    blocks = n // tile
    causal = sum(1 for b in range(blocks) for c in range(blocks) if c * tile <= (b + 1) * tile - 1)
    windowed = sum(
        1 for b in range(blocks) for c in range(blocks)
        if c * tile <= (b + 1) * tile - 1 and (c + 1) * tile - 1 > b * tile - window
    )
    return {"blocks_causal_2048_128": causal, "blocks_window_256_2048_128": windowed}


def generate() -> dict:
    """Every Module 5.1 reference value."""
    return {
        "context_tokens": CONTEXT,
        "gpt_oss_hybrid": gpt_oss_hybrid(),
        "kv_rows": kv_rows(),
        "mla": mla(),
        "model_cards": model_cards(),
        "online_softmax_trace": online_softmax_trace(),
        "running_example": running_example(),
        "schema_version": SCHEMA_VERSION,
        "score_matrix": score_matrix(),
        "sink_share": sink_share(),
        "tiled": tiled(),
        "two_bills": two_bills(),
        "window": {"mistral_v0_1_reach": 32 * 4096},  # Mistral's convention: position i reads i - 4096 .. i
    }
