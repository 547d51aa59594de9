"""Reference metrics of Module 3, "The Basic Transformer", recomputed from their definitions."""

import math

from ._math import dot, mean, softmax

SCHEMA_VERSION = 4


def positional_encoding(length: int = 5, d_model: int = 4, base: float = 10_000.0) -> dict:
    """Sinusoidal table: sine on even coordinates, cosine on odd ones, position on the first axis."""
    table = []
    for position in range(length):
        row = []
        for pair in range(0, d_model, 2):
            angle = position / base ** (pair / d_model)
            row += [math.sin(angle), math.cos(angle)]
        table.append(row)
    return {"d_model": d_model, "length": length, "table": table}


def attention() -> dict:
    """A 3-token causal attention worked by hand: scores, weights and outputs."""
    q = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    k = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    v = [[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]]
    allowed = [[j <= i for j in range(3)] for i in range(3)]
    scale = math.sqrt(len(q[0]))
    scores = [[dot(qi, kj) / scale if ok else None for kj, ok in zip(k, row)] for qi, row in zip(q, allowed)]
    weights = [softmax(row) for row in scores]
    output = [[math.fsum(w * vj[c] for w, vj in zip(row, v)) for c in range(len(v[0]))] for row in weights]
    return {"allowed": allowed, "k": k, "output": output, "q": q, "scores": scores, "v": v, "weights": weights}


def layer_norm() -> dict:
    """LayerNorm without affine parameters and with eps = 0, using the biased variance."""
    x = [1.0, 2.0, 3.0, 4.0]
    mu = mean(x)
    variance = mean([(t - mu) ** 2 for t in x])
    return {"input": x, "mean": mu, "normalized": [(t - mu) / math.sqrt(variance) for t in x], "variance": variance}


def next_token_nll() -> dict:
    """Softmax probabilities of four logits and the negative log-likelihood of token 3."""
    logits, target = [1.2, 0.3, -0.4, 2.0], 3
    probabilities = softmax(logits)
    return {"logits": logits, "nll": -math.log(probabilities[target]), "probabilities": probabilities, "target": target}


def parameter_floor(d_model: int = 512, d_ff: int = 2048) -> dict:
    """Weight counts of the base Transformer's sublayers, without biases or norms."""
    mha = 4 * d_model * d_model
    ffn = 2 * d_model * d_ff
    return {
        "d_ff": d_ff,
        "d_model": d_model,
        "decoder_layer": 2 * mha + ffn,
        "encoder_layer": mha + ffn,
        "ffn_share_encoder": ffn / (mha + ffn),
        "ffn_weights": ffn,
        "mha_weights": mha,
    }


def scaling_experiment(d_k: int = 64) -> dict:
    """Var(q·k) = d_k for unit-variance entries; dividing by sqrt(d_k) brings it to 1."""
    return {
        "d_k": d_k,
        "relative_tolerance": 0.08,
        "samples": 50_000,
        "scaled_variance_target": float(d_k) / d_k,
        "seed": 18,
        "unscaled_variance_target": float(d_k),
    }


def tiny_lm() -> dict:
    """Recipe and pass thresholds of the one-block model on the repeated-segment (copy) task, with and without attention."""
    vocab_size = 8
    return {
        "ablated_accuracy_ceiling": 0.25,  # chance is 1 / vocab_size = 0.125
        "ablated_loss_floor": 0.9 * math.log(vocab_size),  # a model that cannot look back stays near ln V
        "accuracy_threshold": 0.98,
        "batch": 32,
        "d_ff": 48,
        "d_model": 24,
        "eval_sequences": 256,
        "learning_rate": 0.03,
        "loss_threshold": 0.05,
        "n_heads": 2,
        "seed": 18,
        "segment_length": 6,
        "steps": 45,
        "vocab_size": vocab_size,
    }


def it_example() -> dict:
    """Softmax of the pronoun example's three scores (animal, tired, street)."""
    scores = [2.0, 1.0, 0.5]
    return {"scores": scores, "weights": softmax(scores)}


def masks(n: int = 5) -> dict:
    """Allowed entries of a causal mask, and of one decode query with and without its offset."""
    return {
        "causal_allowed": sum(1 for q in range(n) for k in range(n) if k <= q),
        "decode_with_offset": sum(1 for k in range(n) if k <= n - 1),
        "decode_without_offset": sum(1 for k in range(n) if k <= 0),
        "tokens": n,
    }


def attention_cost(d_model: int = 4096, n_long: int = 128_000, q_heads: int = 32, kv_heads: int = 8) -> dict:
    """Where the 4·n²·d score-and-mix FLOPs meet the projections, under four stated conventions.

    The headline convention counts four d × d projections (2·4·n·d² FLOPs), no FFN, and the full
    n × n square. Grouped K/V projections (d × d·kv/q each), a 4d FFN, or a causal kernel that skips
    the upper triangle each move the crossover; every count is exact integer arithmetic.
    """
    from fractions import Fraction

    def crossover(projection_macs_per_d2: Fraction, quadratic_share: Fraction = Fraction(1)) -> int:
        # quadratic_share · 4 n² d = 2 · projection_macs · n d²  =>  n = 2 · projection_macs · d / (4 · share)
        n = 2 * projection_macs_per_d2 * d_model / (4 * quadratic_share)
        if n.denominator != 1:
            raise ValueError(f"the crossover {n} is not a whole number of tokens")
        return int(n)

    grouped = 2 + 2 * Fraction(kv_heads, q_heads)  # W_q and W_o are d × d; W_k and W_v are d × (d · kv / q)
    return {
        "crossover_causal_tokens": crossover(Fraction(4), Fraction(1, 2)),
        "crossover_grouped_kv_tokens": crossover(grouped),
        "crossover_tokens": crossover(Fraction(4)),
        "crossover_with_ffn_tokens": crossover(Fraction(4) + 2 * 4),  # plus a d -> 4d -> d FFN: 8 d² multiply-adds
        "d_model": d_model,
        "kv_heads": kv_heads,
        "long_context": n_long,
        "long_context_ratio": (4 * n_long * n_long * d_model) / (8 * n_long * d_model * d_model),
        "long_context_score_entries": n_long * n_long,
        "q_heads": q_heads,
    }


def kv_cache() -> dict:
    """Bytes per token of a Llama 3.1 8B-shaped KV cache: K and V, 32 layers, 8 heads of width 128, 2 bytes."""
    layers, kv_heads, head_dim, width = 32, 8, 128, 2
    return {
        "bytes_per_token": 2 * layers * kv_heads * head_dim * width,
        "bytes_per_value": width,
        "head_dim": head_dim,
        "kv_heads": kv_heads,
        "layers": layers,
    }


def leakage_probe() -> dict:
    """The unmasked probe's shift at early positions: the last embedding moves by (9 - 5)·8/10, averaged over 5 tokens."""
    return {"changed_from": 5, "changed_to": 9, "tokens": 5, "unmasked_shift": (9 - 5) * 8 / 10 / 5}


def _truncated(weights: list[float], kept: list[int]) -> list[float]:
    """Renormalise ``weights`` over the ``kept`` ids; every other id gets 0."""
    total = math.fsum(weights[i] for i in kept)
    return [weights[i] / total if i in kept else 0.0 for i in range(len(weights))]


def sampling() -> dict:
    """Four decoding policies on the logits (3, 2, 1, 0): T = 1, T = 2, top-k = 2 and top-p = 0.9."""
    logits = [3.0, 2.0, 1.0, 0.0]
    plain = softmax(logits)
    kept, running = [], []
    for token in range(len(logits)):  # the logits are sorted, so the ranking is 0, 1, 2, 3
        kept.append(token)
        running.append(plain[token])
        if math.fsum(running) >= 0.9:
            break
    return {
        "logits": logits,
        "temperature_1": plain,
        "temperature_2": softmax([z / 2 for z in logits]),
        "top_k_2": _truncated(plain, [0, 1]),
        "top_p_09": _truncated(plain, kept),
        "top_p_09_kept": len(kept),
    }


def rope() -> dict:
    """(1, 0, 0, 1) at position 1 with base 10000: pair i turns by 1 / 10000^(2i/4), as (a cos - b sin, a sin + b cos)."""
    x, rotated = [1.0, 0.0, 0.0, 1.0], []
    for i in range(2):
        angle = 1 / 10_000.0 ** (2 * i / 4)
        a, b = x[2 * i], x[2 * i + 1]
        rotated += [a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)]
    return {"rotated": rotated}


def rms_norm() -> dict:
    """RMSNorm of (1, 2, 3, 4) with eps = 0 and a gain of ones: x / sqrt(mean of the squares)."""
    x = [1.0, 2.0, 3.0, 4.0]
    root = math.sqrt(mean([t * t for t in x]))
    return {"normalized": [t / root for t in x]}


def induction_task() -> dict:
    """Recipe and thresholds of the capstone on the induction task: 2 layers must learn it, 1 layer must not.

    Measured with builder/contracts/capstone.py (2 layers, width 32, 2 query heads, 1 K/V head) at 150 steps and
    lr 0.02: 2 layers reached 0.956-1.0 held-out accuracy over seeds 0-9, 1 layer 0.29-0.39; the thresholds leave
    room on both sides. (200 steps at lr 0.01 reach the same, 0.994-1.0, in a third more time; 150 at lr 0.01 fall
    to 0.94 on two seeds.)
    """
    return {
        "accuracy_one_layer_at_most": 0.85,
        "accuracy_two_layers_at_least": 0.95,
        "batch": 64,
        "eval_rows": 512,
        "k_max": 12,
        "k_min": 4,
        "learning_rate": 0.02,
        "seed": 0,
        "steps": 150,
        "vocab": 16,
        "warmup": 20,
    }


def generate() -> dict:
    """Every Module 3 reference value."""
    return {
        "attention": attention(),
        "attention_cost": attention_cost(),
        "induction_task": induction_task(),
        "it_example": it_example(),
        "kv_cache": kv_cache(),
        "layer_norm": layer_norm(),
        "leakage_probe": leakage_probe(),
        "masks": masks(),
        "next_token_nll": next_token_nll(),
        "parameter_floor": parameter_floor(),
        "positional_encoding": positional_encoding(),
        "rms_norm": rms_norm(),
        "rope": rope(),
        "sampling": sampling(),
        "scaling_experiment": scaling_experiment(),
        "schema_version": SCHEMA_VERSION,
        "tiny_lm": tiny_lm(),
    }
