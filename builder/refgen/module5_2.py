"""Reference metrics of Module 5.2, "Cheaper Memory for Long Context", recomputed from their definitions."""

import math

from .module5_1 import CONTEXT, RUNNING, mla, running_example

SCHEMA_VERSION = 5


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


def per_token_bars() -> list[int]:
    """Bytes per token of context on the running shape (32 layers, width 128, 16 bits): MHA (32 KV heads), GQA (8),
    a 512 + 64 latent, GQA at 4 bits with one 16-bit scale per head vector, MQA (1 KV head)."""
    layers, head_dim = 32, 128
    return [
        2 * layers * 32 * head_dim * 2,
        2 * layers * 8 * head_dim * 2,
        layers * (512 + 64) * 2,
        2 * layers * 8 * (head_dim * 4 + 16) // 8,
        2 * layers * 1 * head_dim * 2,
    ]


def capstone() -> dict:
    """Section 16: what each memory holds of the trained capstone after one 23-token row, and the quality thresholds.

    The capstone has 2 layers and 1 K/V head of width 16 (Module 3's CapstoneConfig, d_model 32 and 2 query heads);
    16-bit numbers unless a design stores fewer bits. Thresholds: the trained model retrieves at 0.9 or better; out of
    reach means at most 0.25 (chance is 1/16); 8-bit KIVI moves accuracy by at most 0.01; a rank-4 latent at most 0.5.
    """
    layers, heads, hd, tokens = 2, 1, 16, 23
    per_token = 2 * heads * hd * 2  # a key and a value of 16-bit numbers

    def kivi(bits, group=8):
        quantized = tokens // group * group  # keys of full groups are stored in `bits` bits, the rest in 16
        keys = quantized * heads * hd * bits // 8 + (quantized // group) * heads * hd * 4 + (tokens - quantized) * heads * hd * 2
        values = tokens * heads * (hd * bits // 8 + 4)  # codes, then a 16-bit scale and zero point per token
        return layers * (keys + values)

    held = {"full_attention": layers * tokens * per_token, "window_8": layers * 8 * per_token,
            "window_8_2_sinks": layers * 10 * per_token}
    held |= {f"kivi_{b}_bit": kivi(b) for b in (8, 4, 2)}
    held |= {f"latent_rank_{r}": layers * tokens * r * 2 for r in (4, 8, 16, 32)}
    return {
        "bytes_23_tokens": held,
        "thresholds": {"full_min": 0.9, "kivi_8_bit_drop_max": 0.01, "low_rank_max": 0.5, "out_of_reach_max": 0.25},
    }


def generate() -> dict:
    """Every Module 5.2 reference value."""
    return {
        "capstone": capstone(),
        "context_tokens": CONTEXT,
        "designs_at_1m_bytes": designs_at_1m(),
        "hybrid": hybrid(),
        "latent_example": latent_example(),
        "linear": linear(),
        "mla": {"bytes_per_token": mla()["bytes_per_token"]},
        "per_token_bars_bytes": per_token_bars(),
        "quantized": quantized(),
        "schema_version": SCHEMA_VERSION,
        "selective": selective(),
        "sparse": sparse(),
        "ssm": ssm(),
        "window": window(),
    }
