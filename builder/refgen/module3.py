"""Reference metrics of Module 3, "The Basic Transformer", recomputed from their definitions."""

import math

from ._math import dot, mean, softmax

SCHEMA_VERSION = 1


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
    """Training recipe and pass thresholds of the one-block language model."""
    return {
        "accuracy_threshold": 0.99,
        "context": 12,
        "continuation_accuracy_threshold": 0.95,
        "learning_rate": 0.03,
        "loss_threshold": 0.02,
        "new_tokens": 15,
        "period": [0, 1, 2, 3, 4, 5],
        "seed": 18,
        "steps": 121,
        "training_repeats": 20,
        "vocab_size": 6,
    }


def generate() -> dict:
    """Every Module 3 reference value."""
    return {
        "attention": attention(),
        "layer_norm": layer_norm(),
        "next_token_nll": next_token_nll(),
        "parameter_floor": parameter_floor(),
        "positional_encoding": positional_encoding(),
        "scaling_experiment": scaling_experiment(),
        "schema_version": SCHEMA_VERSION,
        "tiny_lm": tiny_lm(),
    }
