"""Reference metrics of Module 5, "Modern Attention Mechanisms", recomputed from their definitions."""

import math

SCHEMA_VERSION = 4
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


def window() -> dict:
    """Sliding-window pair counts, reach through depth, and the capped cache of the running example."""
    n, w = 8, 3
    return {
        "cache_bytes_4096": 4096 * running_example()["bytes_per_token"],
        "causal_pairs_8": n * (n + 1) // 2,
        "hops_100k": -(-100_000 // 4096),  # each layer relays 4,096 positions
        "mistral_v0_1_reach": 32 * 4096,  # Mistral's convention: position i reads i - 4096 .. i
        "pairs_8_3": sum(min(i + 1, w) for i in range(n)),
        "reach_3_3": 3 * (w - 1),
    }


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


def sparse() -> dict:
    """Pairs scored by 16-token patterns (full causal, window 4, window 4 + global token 0, stride 4),
    the strided pattern's row 13, full causal over a window of 64 at 4,096 tokens, and the shortlist's
    score-multiplication ratio (2,048 keys of width 32, an 8-wide indexer, the top 64 rescored)."""
    n, w, s = 16, 4, 4
    causal = [(i, j) for i in range(n) for j in range(i + 1)]
    full_4096 = 4096 * 4097 // 2
    window_4096 = sum(min(i + 1, 64) for i in range(4096))
    return {
        "full_over_window64_4096": full_4096 / window_4096,
        "pairs_16": [
            len(causal),
            sum(1 for i, j in causal if i - j < w),
            sum(1 for i, j in causal if i - j < w or j == 0),
            sum(1 for i, j in causal if i - j < s or (i - j) % s == 0),
        ],
        "shortlist_score_ratio": (2048 * 8 + 64 * 32) / (2048 * 32),
        "strided_row_13": [j for j in range(14) if 13 - j < s or (13 - j) % s == 0],
    }


def linear() -> dict:
    """Linear attention (phi = elu + 1) on keys (1,0), (0,1), (1,1), values 2, 4, 6, query (1,0),
    and unscaled softmax attention on the same numbers."""
    def phi(v):
        return [x + 1.0 if x > 0 else math.exp(x) for x in v]

    keys, values, query = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [2.0, 4.0, 6.0], [1.0, 0.0]
    S = [math.fsum(phi(k)[m] * v for k, v in zip(keys, values)) for m in range(2)]
    z = [math.fsum(phi(k)[m] for k in keys) for m in range(2)]
    q = phi(query)
    e = [math.exp(math.fsum(a * b for a, b in zip(query, k))) for k in keys]
    return {
        "S": S,
        "output": math.fsum(a * b for a, b in zip(q, S)) / math.fsum(a * b for a, b in zip(q, z)),
        "softmax_output": math.fsum(w * v for w, v in zip(e, values)) / math.fsum(e),
        "z": z,
    }


def ssm() -> dict:
    """The tea example (A = 0.5, B = C = 1, inputs 1, 0, 0, 2): loop states, kernel, and scan rounds at 1,024."""
    h, states = 0.0, []
    for x in (1.0, 0.0, 0.0, 2.0):
        h = 0.5 * h + x
        states.append(h)
    return {"scan_rounds_1024": math.ceil(math.log2(1024)), "tea_kernel": [0.5**k for k in range(4)], "tea_states": states}


def _selective_final(values: list[float], deltas: list[float]) -> float:
    """Final state of the one-channel selective SSM with a = -1, b = c = 1 (zero-order hold)."""
    h = 0.0
    for x, d in zip(values, deltas):
        keep = math.exp(-d)
        h = keep * h + (1.0 - keep) * x
    return h


def selective() -> dict:
    """The recall task: a marked 7 among noise; step sizes softplus(10 u - 5); the best of 60 fixed steps."""
    values = [0.3, -0.5, 7.0, 0.8, -0.2, 0.6, -0.9, 0.4, 0.1, -0.3, 0.5, -0.6]
    markers = [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]

    def softplus(x: float) -> float:
        return max(x, 0.0) + math.log1p(math.exp(-abs(x)))

    deltas = [softplus(10.0 * u - 5.0) for u in markers]
    grid = [10 ** (-3 + 4 * i / 59) for i in range(60)]
    return {
        "best_fixed_final_state": max(_selective_final(values, [d] * len(values)) for d in grid),
        "delta_mark": softplus(5.0),
        "delta_plain": softplus(-5.0),
        "final_state": _selective_final(values, deltas),
    }


def hybrid() -> dict:
    """32 layers of the running example: all attention, 4 attention + 28 SSM (4,096 channels x 16), or all SSM."""
    n, per_layer_token, ssm_layer = 131_072, 2 * 8 * 128 * 2, 4096 * 16 * 2
    return {
        "all_attention_bytes_128k": 32 * n * per_layer_token,
        "attention_layer_bytes_128k": n * per_layer_token,
        "hybrid_4_of_32_bytes_128k": 4 * n * per_layer_token + 28 * ssm_layer,
        "pure_ssm_stack_bytes": 32 * ssm_layer,
        "ssm_layer_bytes": ssm_layer,
    }


def latent_example() -> dict:
    """x = (1, 0, 2, 1) squeezed to a 2-number latent, expanded to two heads' keys, and scored both ways."""
    x, w_down = [1, 0, 2, 1], [[1, 0], [0, 1], [1, 0], [0, 1]]
    w_uk, q = [[1, 0, 1, 0], [0, 1, 0, 1]], [1, 2, 0, 1]
    latent = [sum(x[r] * w_down[r][c] for r in range(4)) for c in range(2)]
    key = [sum(latent[r] * w_uk[r][c] for r in range(2)) for c in range(4)]
    q_latent = [sum(q[c] * w_uk[r][c] for c in range(4)) for r in range(2)]
    assert sum(a * b for a, b in zip(q, key)) == sum(a * b for a, b in zip(q_latent, latent))
    return {"key": key, "latent": latent, "q_latent": q_latent, "score": sum(a * b for a, b in zip(q, key))}


def quantized() -> dict:
    """The key (0.7, -0.3, 0.2, 0.04) at 4 bits (codes -7..7, one scale), and 4-bit bytes per token of the
    running example: codes plus one 16-bit scale per stored head vector."""
    key = [0.7, -0.3, 0.2, 0.04]
    scale = max(abs(x) for x in key) / 7
    bits_per_token = 2 * RUNNING["layers"] * RUNNING["kv_heads"] * (RUNNING["head_dim"] * 4 + 16)
    return {"bytes_per_token_4bit": bits_per_token // 8, "codes_4bit": [round(x / scale) for x in key]}


def designs_at_1m() -> list[int]:
    """Cache bytes at 2**20 tokens on the running shape (32 layers): MHA (32 KV heads), GQA (8), latent
    (512 + 64 per layer), GQA at 4 bits, hybrid (4 attention + 28 SSM layers), 4,096 window, all-SSM."""
    n, layers, head_dim = 2**20, 32, 128
    ssm_layer = 4096 * 16 * 2
    return [
        2 * layers * 32 * head_dim * 2 * n,
        2 * layers * 8 * head_dim * 2 * n,
        layers * (512 + 64) * 2 * n,
        2 * layers * 8 * (head_dim * 4 + 16) // 8 * n,
        4 * 2 * 8 * head_dim * 2 * n + 28 * ssm_layer,
        2 * layers * 8 * head_dim * 2 * 4096,
        layers * ssm_layer,
    ]


def generate() -> dict:
    """Every Module 5 reference value."""
    return {
        "context_tokens": CONTEXT,
        "designs_at_1m_bytes": designs_at_1m(),
        "gpt_oss_hybrid": gpt_oss_hybrid(),
        "hybrid": hybrid(),
        "kv_rows": kv_rows(),
        "latent_example": latent_example(),
        "linear": linear(),
        "mla": mla(),
        "model_cards": model_cards(),
        "online_softmax_trace": online_softmax_trace(),
        "quantized": quantized(),
        "running_example": running_example(),
        "schema_version": SCHEMA_VERSION,
        "selective": selective(),
        "score_matrix": score_matrix(),
        "sink_share": sink_share(),
        "sparse": sparse(),
        "ssm": ssm(),
        "tiled": tiled(),
        "two_bills": two_bills(),
        "window": window(),
    }
