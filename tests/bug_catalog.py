"""A catalog of named, realistic student bugs in the Module 3 and Module 5 exercises.

Each entry is one mistake a student plausibly makes while writing an exercise function, the
contract check (from ``builder/contracts``) that must catch it, and the property the resulting
ContractViolation must name. Most bugs are *mutants*: the notebook's own solution with one source
fragment edited, so the bug sits in otherwise correct code. The few that need a different structure
are written by hand. ``tests/test_bug_catalog.py`` runs every entry.
"""

from collections.abc import Callable
from dataclasses import dataclass

from tests.support import mutant, notebook


@dataclass(frozen=True)
class Bug:
    """One realistic mistake, how to build it, and how its contract must report it."""

    id: str
    module: str  # the notebook's reference name, as in pyproject.toml: "module3", "module5_1", "module5_2"
    target: str  # the notebook function the mistake is made in
    mistake: str  # what the student did, in one sentence
    contract: str  # the contract check in builder/contracts that must catch it
    property: str  # text that ContractViolation.property must contain
    edits: tuple[tuple[str, str], ...] = ()  # (old, new) source edits of the notebook's own function ...
    written: Callable[[dict], Callable] | None = None  # ... or a hand-written implementation, from the notebook's namespace
    hint: str = ""  # text the violation's "usual cause" must contain, where the contract can tell the mistake

    def __post_init__(self):
        if bool(self.edits) == (self.written is not None):
            raise ValueError(f"{self.id}: give either source edits or a hand-written implementation, not both or neither")

    @property
    def source_edits(self) -> tuple[tuple[str, str], ...]:
        """The (old, new) edits of the notebook source that make this bug, when it is made by edits."""
        return self.edits or getattr(self.written, "edits", ())

    def build(self):
        """The buggy implementation, ready to hand to its contract."""
        nb = notebook(self.module)
        return mutant(nb, self.target, *self.edits) if self.edits else self.written(nb)


def edit(old, new):
    """One source edit: replace ``old`` (which must occur exactly once) by ``new``."""
    return ((old, new),)


# ---- hand-written implementations, for mistakes that change the shape of the code -----------------------


def _attention(bug):
    """A complete attention written from scratch with one mistake (Module 3, scaled_dot_product_attention)."""

    def build(nb):
        math, np, torch, result = nb["math"], nb["np"], nb["torch"], nb["AttentionResult"]

        def attention(q, k, v, allowed=None, *, empty_row="error"):
            shapes = (q.shape[:-2], k.shape[:-2]) if bug == "batch-from-qk" else (q.shape[:-2], k.shape[:-2], v.shape[:-2])
            batch = np.broadcast_shapes(*(tuple(s) for s in shapes))
            q, k = (t.expand(*batch, *t.shape[-2:]) for t in (q, k))
            if bug != "batch-from-qk":
                v = v.expand(*batch, *v.shape[-2:])
            shape = (*batch, q.shape[-2], k.shape[-2])
            allowed = torch.ones(shape, dtype=torch.bool) if allowed is None else torch.broadcast_to(allowed, shape)
            empty = ~allowed.any(-1)
            if empty_row == "error" and bool(empty.any()) and bug != "no-empty-error":
                raise ValueError("fully masked row")
            scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, float("-inf"))
            top = scores.amax(-1, keepdim=True).masked_fill(empty[..., None], 0.0)
            exps = torch.exp(scores - top)
            weights = exps / exps.sum(-1, keepdim=True).masked_fill(empty[..., None], 1.0)
            if bug == "uniform-empty-rows":
                weights = torch.where(empty[..., None], torch.full_like(weights, 1.0 / weights.shape[-1]), weights)
            output = weights @ v
            if bug == "position-leak":
                output = output + 1e-3 * torch.arange(output.shape[-2], dtype=output.dtype)[:, None]
            return result(output, weights, scores, empty)

        return attention

    return build


def _dense_tiled_attention(nb):
    """A 'tiled' attention that builds the whole T_q x T_k score matrix and calls dense attention."""
    np, sdpa = nb["np"], nb["sdpa"]

    def tiled_attention(Q, K, V, mask=None, **options):
        n_q, n_k = np.shape(Q)[0], np.shape(K)[0]
        start = options.get("query_start", 0)
        distance = (start + np.arange(n_q))[:, None] - np.arange(n_k)[None, :]
        allowed = distance >= 0 if options.get("causal") else np.ones((n_q, n_k), dtype=bool)
        if options.get("window") is not None:
            allowed &= distance < options["window"]
        full = np.where(allowed, 0.0, -np.inf) + (0.0 if mask is None else mask)
        return sdpa(Q, K, V, full, sink=options.get("sink"), empty_row=options.get("empty_row", "error"))

    return tiled_attention


def _dense_plain_tiled_attention(nb):
    """A 'plain tiled' attention that builds the whole T_q x T_k score matrix and calls dense attention."""
    sdpa = nb["sdpa"]

    def tiled_attention_plain(Q, K, V, *, tile_size=128):
        return sdpa(Q, K, V)

    return tiled_attention_plain


def _dense_causal_with_paper_count(prefix_only):
    """A 'causal tiled' attention that is dense causal attention plus the tile count worked out on paper.

    ``prefix_only`` slices the keys to the first T_q (so it never touches unwritten slots) before the dense softmax.
    """

    def build(nb):
        np, math = nb["np"], nb["math"]

        def causal_tiled_attention(Q, K, V, *, tile_size=128):
            n = len(Q)
            blocks = -(-n // tile_size)
            K, V = (K[:n], V[:n]) if prefix_only else (K, V)
            scores = np.where(np.tri(n, len(K), dtype=bool), Q @ K.T / math.sqrt(Q.shape[1]), -np.inf)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            return (weights / weights.sum(axis=1, keepdims=True)) @ V, blocks * (blocks + 1) // 2

        return causal_tiled_attention

    return build


def _dense_backward(bug):
    """A 'tiled' backward pass that is not tiled: the full P from the lse, rows renormalised, or autograd itself."""

    def build(nb):
        np, math, torch = nb["np"], nb["math"], nb["torch"]

        def tiled_attention_backward(Q, K, V, O, dO, lse, *, tile_size=128, causal=True):
            if bug == "autograd":
                q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                return tuple(g.numpy() for g in torch.autograd.grad(out, (q, k, v), torch.tensor(dO)))
            s = Q @ K.T / math.sqrt(Q.shape[1])
            if causal:
                s = np.where(np.tri(len(Q), len(K), dtype=bool), s, -np.inf)
            p = np.exp(s - lse[:, None])
            if bug == "renormalised":
                p = p / p.sum(axis=1, keepdims=True)
            ds = p * (dO @ V.T - (dO * O).sum(axis=1)[:, None])
            return ds @ K / math.sqrt(Q.shape[1]), ds.T @ Q / math.sqrt(Q.shape[1]), p.T @ dO

        return tiled_attention_backward

    return build
def _history_rolling_step(nb):
    """Module 5.2's Exercise 1 skipped: keep every token in a private history and mask it (sdpa with a window mask)."""
    np, sdpa, make_mask = nb["np"], nb["sdpa"], nb["make_mask"]
    history = []

    def rolling_buffer_step(keys, values, t, q, k, v):
        if t == 0:
            history.clear()
        history.append((k, v))
        K, V = np.array([h[0] for h in history]), np.array([h[1] for h in history])
        keys[t % len(keys)], values[t % len(keys)] = k, v
        return keys, values, sdpa(q[None, :], K, V, make_mask(len(K), len(keys))[-1:])[0]

    return rolling_buffer_step


def _growing_rolling_step(nb):
    """Module 5.2's Exercise 1 with a buffer that grows: every token appended, the last `window` read."""
    np, math = nb["np"], nb["math"]

    def rolling_buffer_step(keys, values, t, q, k, v):
        window = len(keys)
        keys, values = np.vstack([keys, k]), np.vstack([values, v])
        held = min(t + 1, window)
        scores = keys[-held:] @ q / math.sqrt(len(q))
        weights = np.exp(scores - scores.max())
        return keys, values, weights @ values[-held:] / weights.sum()

    return rolling_buffer_step


def _shifting_rolling_step(nb):
    """Module 5.2's Exercise 1 as a shift register: every slot moves one place per token (np.roll), the newest last."""
    np, math = nb["np"], nb["math"]

    def rolling_buffer_step(keys, values, t, q, k, v):
        keys, values = np.roll(keys, -1, axis=0), np.roll(values, -1, axis=0)
        keys[-1], values[-1] = k, v
        held = min(t + 1, len(keys))
        scores = keys[-held:] @ q / math.sqrt(len(q))
        weights = np.exp(scores - scores.max())
        return keys, values, weights @ values[-held:] / weights.sum()

    return rolling_buffer_step


def _quadratic_linear_step(nb):
    """Module 5.2's Exercise 2 skipped: keep the tokens, form the n x n weights, rebuild S and z from the history."""
    np, quadratic, feature_map = nb["np"], nb["linear_attention_quadratic"], nb["feature_map"]
    history = []

    def linear_attention_step(S, z, q, k, v):
        if not S.any() or (history and len(history[0][1]) != len(k)):
            history.clear()
        history.append((q, k, v))
        Q, K, V = (np.array([h[i] for h in history]) for i in range(3))
        return feature_map(K).T @ V, feature_map(K).sum(axis=0), quadratic(Q, K, V)[-1]

    return linear_attention_step


def _expanded_latent_attention(nb):
    """Module 5.2's Exercise 4 skipped: return the expanded form, which builds latent @ W_uk."""
    expanded = nb["mla_expanded_attention"]

    def mla_absorbed_attention(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask=None):
        return expanded(q_nope, q_rope, latent, k_rope, W_uk, W_uv, W_o, mask)

    return mla_absorbed_attention


def _hillis_steele_rounds(nb):
    """Module 5.2's Exercise 6 planned as Exercise 3's scan: every position merges in every round, T log T work."""

    def work_efficient_rounds(T):
        rounds, d = [], 1
        while d < T:
            rounds.append([(j - d, j) for j in range(d, T)])
            d *= 2
        return rounds

    return work_efficient_rounds


def _sequential_rounds(nb):
    """Module 5.2's Exercise 6 planned as the loop: one merge per round, T - 1 rounds."""

    def work_efficient_rounds(T):
        return [[(t - 1, t)] for t in range(1, T)]

    return work_efficient_rounds


def _class_mutant(name, *edits):
    """A notebook class rebuilt from its source text with (old, new) edits: inspect.getsource cannot see these classes."""

    def build(nb):
        import ast

        from tests.support import NOTEBOOK_SOURCES

        text = NOTEBOOK_SOURCES["module3"].read_text(encoding="utf-8")
        node = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == name)
        source = ast.get_source_segment(text, node)
        for old, new in edits:
            if source.count(old) != 1:
                raise AssertionError(f"{old!r} must occur exactly once in {name}")
            source = source.replace(old, new)
        namespace = dict(nb)
        exec(compile(source, f"<mutant of {name}>", "exec"), namespace)
        return namespace[name]

    build.edits = edits  # the same edits, for tests that make them in the notebook source itself
    return build


def _cell_mutant(names, target, *edits):
    """Several notebook definitions of one exercise cell rebuilt together with (old, new) edits; returns ``target``.

    An edit may fall in any of them; each must occur exactly once in their joined source.
    """

    def build(nb):
        import ast

        from tests.support import NOTEBOOK_SOURCES

        text = NOTEBOOK_SOURCES["module3"].read_text(encoding="utf-8")
        nodes = {n.name: n for n in ast.parse(text).body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        source = "\n\n".join(ast.get_source_segment(text, nodes[name]) for name in names)
        for old, new in edits:
            if source.count(old) != 1:
                raise AssertionError(f"{old!r} must occur exactly once in {', '.join(names)}")
            source = source.replace(old, new)
        namespace = dict(nb)
        exec(compile(source, f"<mutant of {', '.join(names)}>", "exec"), namespace)
        return namespace[target]

    build.edits = edits
    return build


# ---- Module 3 ----------------------------------------------------------------------------------------------

PE, CAUSAL, ATTENTION = "check_positional_encoding_contract", "check_causal_mask_contract", "check_attention_contract"
SPLIT, MERGE, REPEAT = "check_split_heads_contract", "check_merge_heads_contract", "check_kv_repeat_contract"
MHA, MHA_MATCHES = "check_multi_head_attention_contract", "the output equals an independent multi-head attention"
LAYER_NORM, SAMPLING, GREEDY = "check_layer_norm_contract", "check_token_distribution_contract", "check_greedy_trace_contract"
ROPE, RMS, SWIGLU = "check_rope_contract", "check_rms_norm_contract", "check_swiglu_contract"
ROPE_ATTENTION, MODEL = "check_capstone_attention_contract", "check_capstone_model_contract"
STEP, GENERATE = "check_train_step_contract", "check_kv_generation_contract"
INDUCTION_BATCH, FIT, ACCURACY = "check_induction_batch_contract", "check_fit_induction_contract", "check_induction_accuracy_contract"
MATCHES_SDPA = "output matches F.scaled_dot_product_attention"

STACK = "torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1)"
CAUSAL_RETURN = "return key_position <= query_position"
QUERY_POSITION = "query_offset + torch.arange(t_q)[:, None]"
SCALE = "/ math.sqrt(q.shape[-1])"
MASK_FILL = 'scores = scores.masked_fill(~allowed, float("-inf"))'
SAFE_TOP = "top = scores.amax(dim=-1, keepdim=True).masked_fill(empty_rows[..., None], 0.0)"
SOFTMAX_LINES = """    top = scores.amax(dim=-1, keepdim=True).masked_fill(empty_rows[..., None], 0.0)  # 0 on empty rows: no -inf - -inf
    exps = torch.exp(scores - top)                                         # exactly 0 where blocked
    total = exps.sum(dim=-1, keepdim=True).masked_fill(empty_rows[..., None], 1.0)
    weights = exps / total                                                 # rows sum to 1; empty rows stay 0
"""
MERGE_RETURN = "return x.transpose(-3, -2).flatten(-2)"
MEAN = "mean = x.mean(dim=-1, keepdim=True)"
VARIANCE = "variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)"
SQRT = "torch.sqrt(variance + eps)"
EXP = "math.exp((z - largest) / temperature)"
GREEDY_STEP = """        tokens.append(max(range(len(probabilities)), key=probabilities.__getitem__))
        if tokens[-1] == eos_id:
            return tokens, "eos"
"""
GREEDY_STOPS = """        if tokens[-1] == eos_id:
            return tokens, "eos"
        if len(tokens) == max_new_tokens:
            return tokens, "length_limit"
"""
MODULE3 = [
    # Exercise 1: sinusoidal_encoding
    Bug("pe-sin-cos-swapped", "module3", "sinusoidal_encoding", "puts the cosine on the even columns and the sine on the odd ones",
        PE, "position 0 is (0, 1, 0, 1, ...)", edit(STACK, "torch.stack((torch.cos(angle), torch.sin(angle)), dim=-1)"), hint="swapped"),
    Bug("pe-exponent-per-pair", "module3", "sinusoidal_encoding", "uses base^(-i/d) for pair i, counting pairs instead of coordinates",
        PE, "table equals sin/cos", edit("torch.arange(0, d_model, 2, dtype=dtype)", "torch.arange(d_model // 2, dtype=dtype)"),
        hint="exponent counts coordinates"),
    Bug("pe-not-interleaved", "module3", "sinusoidal_encoding", "concatenates all sines and then all cosines instead of interleaving them",
        PE, "position 0", edit(STACK, "torch.cat((torch.sin(angle), torch.cos(angle)), dim=-1)"), hint="interleave"),
    Bug("pe-positions-from-1", "module3", "sinusoidal_encoding", "numbers the positions from 1",
        PE, "position 0", edit("torch.arange(length, dtype=dtype)", "torch.arange(1, length + 1, dtype=dtype)")),
    Bug("pe-transposed", "module3", "sinusoidal_encoding", "returns the (d_model, length) transpose of the table",
        PE, "shape is (length, d_model)", edit("return table.reshape(length, d_model)", "return table.reshape(length, d_model).T")),
    Bug("pe-ignores-base", "module3", "sinusoidal_encoding", "hard-codes 10000 instead of using the base argument",
        PE, "the base argument sets the frequencies", edit("base ** (", "10_000.0 ** (")),
    # Exercise 2: causal_allowed
    Bug("causal-mask-off-by-one", "module3", "causal_allowed", "uses key < query, so a token cannot read its own key",
        CAUSAL, "never the future", edit(CAUSAL_RETURN, "return key_position < query_position"), hint="its own key"),
    Bug("causal-mask-one-ahead", "module3", "causal_allowed", "shifts the diagonal one step into the future",
        CAUSAL, "never the future", edit(QUERY_POSITION, "query_offset + 1 + torch.arange(t_q)[:, None]"), hint="off by one"),
    Bug("query-offset-ignored", "module3", "causal_allowed", "builds the triangle from local query positions, ignoring query_offset",
        CAUSAL, "absolute positions", edit(QUERY_POSITION, "torch.arange(t_q)[:, None]"), hint="query_offset was ignored"),
    Bug("causal-mask-inverted", "module3", "causal_allowed", "returns True where attention is blocked",
        CAUSAL, "never the future", edit(CAUSAL_RETURN, "return key_position > query_position"), hint="inverted"),
    Bug("causal-mask-float", "module3", "causal_allowed", "returns a 0/1 float mask instead of a bool one",
        CAUSAL, "a bool tensor", edit(CAUSAL_RETURN, "return (key_position <= query_position).float()")),
    # Exercise 3: scaled_dot_product_attention
    Bug("attention-scale-dk", "module3", "scaled_dot_product_attention", "divides the scores by d_k instead of sqrt(d_k)",
        ATTENTION, MATCHES_SDPA, edit(SCALE, "/ q.shape[-1]"), hint="divided by d_k"),
    Bug("attention-no-scale", "module3", "scaled_dot_product_attention", "does not scale the scores at all",
        ATTENTION, MATCHES_SDPA, edit(SCALE, ""), hint="not scaled"),
    Bug("softmax-wrong-axis", "module3", "scaled_dot_product_attention", "normalises the softmax over the query axis (dim=-2)",
        ATTENTION, MATCHES_SDPA,
        (("scores.amax(dim=-1, keepdim=True)", "scores.amax(dim=-2, keepdim=True)"), ("exps.sum(dim=-1, keepdim=True)", "exps.sum(dim=-2, keepdim=True)")),
        hint="query axis"),
    Bug("attention-mask-ignored", "module3", "scaled_dot_product_attention", "never applies the mask to the scores",
        ATTENTION, MATCHES_SDPA, edit(MASK_FILL, "pass"), hint="mask was ignored"),
    Bug("attention-mask-after-softmax", "module3", "scaled_dot_product_attention", "zeroes blocked weights after the softmax instead of masking the scores",
        ATTENTION, MATCHES_SDPA, ((MASK_FILL, "pass"), ("output = weights @ v", "output = weights.masked_fill(~allowed, 0.0) @ v")),
        hint="after the softmax"),
    Bug("attention-detached-weights", "module3", "scaled_dot_product_attention", "detaches the weights, so no gradient reaches q and k",
        ATTENTION, "gradient with respect to", edit("output = weights @ v", "output = weights.detach() @ v")),
    Bug("nan-on-fully-masked-row", "module3", "scaled_dot_product_attention", "takes the row max without the safe 0 for empty rows: -inf - -inf = NaN",
        ATTENTION, "empty_row='zero' gives a zero output row", edit(SAFE_TOP, "top = scores.amax(dim=-1, keepdim=True)"), hint="NaN"),
    Bug("attention-plain-softmax-nan-rows", "module3", "scaled_dot_product_attention", "uses torch.softmax, which returns NaN on a fully masked row",
        ATTENTION, "empty_row='zero' gives a zero output row", edit(SOFTMAX_LINES, "    weights = torch.softmax(scores, dim=-1)\n")),
    Bug("attention-uniform-empty-rows", "module3", "scaled_dot_product_attention", "gives fully masked rows uniform weights instead of zeros",
        ATTENTION, "empty_row='zero' gives a zero output row", written=_attention("uniform-empty-rows")),
    Bug("attention-no-empty-row-error", "module3", "scaled_dot_product_attention", "returns normally on a fully masked row by default",
        ATTENTION, "raises ValueError by default", written=_attention("no-empty-error")),
    Bug("attention-batch-from-qk", "module3", "scaled_dot_product_attention", "takes the batch shape from q and k only, forgetting v's batch axes",
        ATTENTION, "a batch axis carried only by V", written=_attention("batch-from-qk")),
    Bug("attention-position-leak", "module3", "scaled_dot_product_attention", "adds a term that depends on the query's position",
        ATTENTION, MATCHES_SDPA, written=_attention("position-leak")),
    Bug("attention-dot-t-on-batches", "module3", "scaled_dot_product_attention", "transposes k with .T, which reverses every axis of a batched tensor",
        ATTENTION, MATCHES_SDPA, edit("q @ k.transpose(-2, -1)", "q @ k.T"), hint="k.T reverses every axis"),
    # Exercise 4: split_heads
    Bug("split-heads-reshape-without-transpose", "module3", "split_heads", "reshapes (B, T, H*d) straight to (B, H, T, d), mixing tokens",
        SPLIT, "head h of token t", edit("return heads.transpose(-3, -2)", "return x.reshape(*x.shape[:-2], n_heads, x.shape[-2], -1)"),
        hint="reshape to (B, T, H, d) first"),
    Bug("split-heads-wrong-transpose", "module3", "split_heads", "transposes the last two axes instead of tokens and heads",
        SPLIT, "shape (B, T, H*d) -> (B, H, T, d)", edit("heads.transpose(-3, -2)", "heads.transpose(-2, -1)")),
    # Exercise 4: merge_heads (with repeat_kv_heads)
    Bug("heads-merged-wrong-transpose", "module3", "merge_heads", "transposes tokens and features instead of heads and tokens before flattening",
        MERGE, "merging undoes the split", edit(MERGE_RETURN, "return x.transpose(-2, -1).reshape(*x.shape[:-3], x.shape[-2], -1)"),
        hint="the wrong axes were transposed"),
    Bug("heads-merged-without-transpose", "module3", "merge_heads", "reshapes (B, H, T, d) straight to (B, T, H*d)",
        MERGE, "merging undoes the split", edit(MERGE_RETURN, "return x.reshape(*x.shape[:-3], x.shape[-2], -1)"),
        hint="without moving the head axis back"),
    Bug("heads-merged-with-view", "module3", "merge_heads", "calls view on the non-contiguous transpose",
        MERGE, "merging undoes the split", edit(MERGE_RETURN, "return x.transpose(-3, -2).view(*x.shape[:-3], x.shape[-2], -1)"),
        hint="raised on a valid input"),
    # Exercise 4: repeat_kv_heads
    Bug("gqa-tile-not-repeat", "module3", "repeat_kv_heads", "tiles the K/V heads (0, 1, 0, 1) instead of repeating each in place (0, 0, 1, 1)",
        REPEAT, "h // group", edit("x.repeat_interleave(group, dim=-3)", "x.repeat(*([1] * (x.ndim - 3)), group, 1, 1)"),
        hint="use np.repeat / torch.repeat_interleave"),
    Bug("gqa-repeat-token-axis", "module3", "repeat_kv_heads", "repeats along the token axis instead of the head axis",
        REPEAT, "shape", edit("x.repeat_interleave(group, dim=-3)", "x.repeat_interleave(group, dim=-2)")),
    # Runnable mistakes that used to crash cells far below the exercise (issue 11's table).
    Bug("attention-row-max-without-keepdim", "module3", "scaled_dot_product_attention", "drops keepdim=True from the row max, so it no longer broadcasts",
        ATTENTION, MATCHES_SDPA, edit("top = scores.amax(dim=-1, keepdim=True)", "top = scores.amax(dim=-1, keepdim=False)")),
    Bug("split-heads-constant-head-width", "module3", "split_heads", "hard-codes the head width of the running example instead of d_model // n_heads",
        SPLIT, "head h of token t", edit("x.unflatten(-1, (n_heads, x.shape[-1] // n_heads))", "x.unflatten(-1, (n_heads, 8))")),
    # Exercise 5: MultiHeadSelfAttention.forward
    Bug("mha-forward-ignores-causal", "module3", "MultiHeadSelfAttention", "builds the padding mask but forgets the causal triangle",
        MHA, MHA_MATCHES, written=_class_mutant("MultiHeadSelfAttention", ("allowed = allowed & causal_allowed(length, length)", "allowed = allowed")),
        hint="causal mask was not applied"),
    Bug("mha-forward-tiles-kv", "module3", "MultiHeadSelfAttention", "shares K/V heads by tiling them (kv0, kv1, kv0, kv1) instead of repeating each",
        MHA, MHA_MATCHES, written=_class_mutant(
        "MultiHeadSelfAttention", ("k = repeat_kv_heads(split_heads(self.k_proj(x), self.n_kv_heads), group)", "k = split_heads(self.k_proj(x), self.n_kv_heads).repeat(1, group, 1, 1)"),
         ("v = repeat_kv_heads(split_heads(self.v_proj(x), self.n_kv_heads), group)", "v = split_heads(self.v_proj(x), self.n_kv_heads).repeat(1, group, 1, 1)")),
        hint="tiled"),
    Bug("mha-forward-merge-without-transpose", "module3", "MultiHeadSelfAttention", "reshapes the (B, H, T, d) attention output straight to (B, T, H*d) instead of calling merge_heads",
        MHA, MHA_MATCHES, written=_class_mutant(
        "MultiHeadSelfAttention", ("self.out_proj(merge_heads(result.output).to(x.dtype))", "self.out_proj(result.output.reshape(batch, length, -1).to(x.dtype))")),
        hint="without moving the head axis back"),
    Bug("mha-forward-skips-out-proj", "module3", "MultiHeadSelfAttention", "returns the merged heads without the output projection",
        MHA, MHA_MATCHES, written=_class_mutant(
            "MultiHeadSelfAttention", ("output = self.out_proj(merge_heads(result.output).to(x.dtype))", "output = merge_heads(result.output).to(x.dtype)")),
        hint="without the output projection"),
    Bug("mha-forward-padding-keys-only", "module3", "MultiHeadSelfAttention", "masks padding keys but lets padded queries attend",
        MHA, "padded queries give zero rows",
        written=_class_mutant("MultiHeadSelfAttention", ("allowed = allowed & token_valid[:, None, None, :] & token_valid[:, None, :, None]",
                                                         "allowed = allowed & token_valid[:, None, None, :]"))),
    # Exercise 6: layer_norm
    Bug("layernorm-unbiased-variance", "module3", "layer_norm", "uses x.var(), whose default is the unbiased (n - 1) estimator",
        LAYER_NORM, "biased variance", edit(VARIANCE, "variance = x.var(dim=-1, keepdim=True)"), hint="unbiased (divides by n - 1)"),
    Bug("layernorm-wrong-axis", "module3", "layer_norm", "normalises over the batch axis instead of the features",
        LAYER_NORM, "biased variance", ((MEAN, "mean = x.mean(dim=0, keepdim=True)"), (VARIANCE, VARIANCE.replace("dim=-1", "dim=0"))),
        hint="wrong axis"),
    Bug("layernorm-eps-outside-sqrt", "module3", "layer_norm", "adds eps after the square root",
        LAYER_NORM, "eps sits inside the square root", edit(SQRT, "(torch.sqrt(variance) + eps)"), hint="eps goes inside the square root"),
    Bug("layernorm-no-eps", "module3", "layer_norm", "forgets eps",
        LAYER_NORM, "eps sits inside", edit(SQRT, "torch.sqrt(variance)")),
    Bug("layernorm-ignores-affine", "module3", "layer_norm", "never applies weight and bias",
        LAYER_NORM, "weight scales and bias shifts",
        (("normalized = normalized * weight", "pass"), ("normalized = normalized + bias", "pass")), hint="ignored"),
    Bug("layernorm-affine-swapped", "module3", "layer_norm", "multiplies by the bias and adds the weight",
        LAYER_NORM, "weight scales",
        (("normalized = normalized * weight", "normalized = normalized * bias"), ("normalized = normalized + bias", "normalized = normalized + weight")),
        hint="swapped"),
    Bug("layernorm-detached-statistics", "module3", "layer_norm", "detaches the mean, so its gradient is lost",
        LAYER_NORM, "gradients match F.layer_norm", edit(MEAN, MEAN + ".detach()")),
    # Exercise 7: token_distribution
    Bug("temperature-after-softmax", "module3", "token_distribution", "divides the probabilities by the temperature after the softmax",
        SAMPLING, "temperature divides the logits",
        ((EXP, "math.exp(z - largest)"), ("weights[i] / total if i in order", "weights[i] / total / temperature if i in order"))),
    Bug("temperature-multiplies", "module3", "token_distribution", "multiplies the logits by the temperature",
        SAMPLING, "temperature divides the logits", edit(EXP, "math.exp((z - largest) * temperature)"),
        hint="multiplied by the temperature"),
    Bug("top-k-off-by-one", "module3", "token_distribution", "keeps top_k + 1 tokens",
        SAMPLING, "top_k keeps exactly the k", edit("order[:top_k]", "order[:top_k + 1]"), hint="off by one"),
    Bug("top-k-first-ids", "module3", "token_distribution", "keeps the first k token ids instead of the k largest logits",
        SAMPLING, "wherever they sit", edit("order[:top_k]", "list(range(top_k))"), hint="first k ids"),
    Bug("top-p-drops-crossing-token", "module3", "token_distribution", "stops before adding the token whose mass crosses top_p",
        SAMPLING, "keeps the token that crosses",
        edit("order = order[:crossing + 1]", "order = order[:crossing] or order[:1]"), hint="was dropped"),
    Bug("top-p-ignored", "module3", "token_distribution", "never applies the top_p filter",
        SAMPLING, "keeps the token that crosses", edit("if top_p is not None:\n        mass", "if False:\n        mass")),
    Bug("sampling-ties-to-higher-id", "module3", "token_distribution", "breaks ties between equal logits toward the higher token id",
        SAMPLING, "ties", edit("(-logits[i], i)", "(-logits[i], -i)")),
    Bug("sampling-no-max-shift", "module3", "token_distribution", "exponentiates the raw logits, which overflows at 1000",
        SAMPLING, "large logits do not overflow", edit(EXP, "math.exp(z / temperature)")),
    Bug("top-p-on-full-mass", "module3", "token_distribution", "measures top_p on the mass of all tokens instead of the top_k survivors",
        SAMPLING, "then top_p measured on the kept mass", edit("mass = math.fsum(weights[i] for i in order)", "mass = math.fsum(weights)")),
    # Exercise 8: greedy_trace
    Bug("greedy-drops-eos", "module3", "greedy_trace", "stops at EOS without appending it",
        GREEDY, "EOS stops the trace and is kept",
        edit(GREEDY_STEP, "        best = max(range(len(probabilities)), key=probabilities.__getitem__)\n"
                          "        if best == eos_id:\n            return tokens, \"eos\"\n        tokens.append(best)\n")),
    Bug("greedy-one-token-too-many", "module3", "greedy_trace", "stops after max_new_tokens + 1 tokens",
        GREEDY, "the length limit stops the trace", edit("if len(tokens) == max_new_tokens:", "if len(tokens) > max_new_tokens:")),
    Bug("greedy-limit-before-eos", "module3", "greedy_trace", "checks the length limit before EOS",
        GREEDY, "EOS on the last allowed step",
        edit(GREEDY_STOPS, "        if len(tokens) == max_new_tokens:\n            return tokens, \"length_limit\"\n"
                           "        if tokens[-1] == eos_id:\n            return tokens, \"eos\"\n")),
    Bug("greedy-ties-to-last", "module3", "greedy_trace", "breaks ties toward the higher token id",
        GREEDY, "ties go to the lower token id", edit("key=probabilities.__getitem__", "key=lambda i: (probabilities[i], i)")),
    Bug("greedy-ascending-sort", "module3", "greedy_trace", "takes the first entry of an ascending sort: the least likely token",
        GREEDY, "greedy takes the largest logit at every step", edit("key=probabilities.__getitem__", "key=lambda i: -probabilities[i]"), hint="argmin"),
    Bug("greedy-silent-end", "module3", "greedy_trace", "returns 'length_limit' when the prepared logits run out",
        GREEDY, "raises ValueError",
        edit('raise ValueError(f"the {len(steps)} prepared steps ran out before EOS or the limit of {max_new_tokens} tokens")',
             'return tokens, "length_limit"')),
    # Exercise 9: apply_rope
    Bug("rope-exponent-per-pair", "module3", "apply_rope", "uses base^(-i/d) for pair i, counting pairs instead of coordinates",
        ROPE, "turns by p * base", edit("base ** (-2 * torch.arange(half", "base ** (-torch.arange(half"), hint="counts coordinates (2i)"),
    Bug("rope-wrong-direction", "module3", "apply_rope", "turns each pair by minus its angle",
        ROPE, "turns by p * base", edit("(even * cos - odd * sin, even * sin + odd * cos)", "(even * cos + odd * sin, odd * cos - even * sin)"),
        hint="wrong way"),
    Bug("rope-ignores-positions", "module3", "apply_rope", "numbers the tokens 0, 1, 2, ... instead of using their positions",
        ROPE, "turns by p * base", edit("angle = positions.to(torch.float64)[:, None]", "angle = torch.arange(x.shape[-2], dtype=torch.float64)[:, None]"),
        hint="positions argument was ignored"),
    # Exercise 10: RMSNorm
    Bug("rmsnorm-subtracts-mean", "module3", "RMSNorm", "centres the token first, as LayerNorm does",
        RMS, "output is x / sqrt(mean(x^2) + eps) * weight", written=_cell_mutant(("RMSNorm",), "RMSNorm", (
            "return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight",
            "x = x - x.mean(dim=-1, keepdim=True)\n        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight")),
        hint="that is LayerNorm"),
    Bug("rmsnorm-eps-outside-sqrt", "module3", "RMSNorm", "adds eps after the square root",
        RMS, "output is x / sqrt", written=_cell_mutant(("RMSNorm",), "RMSNorm", (
            "torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)", "1 / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps)")),
        hint="inside the square root"),
    # Exercise 11: SwiGLU
    Bug("swiglu-gate-on-up", "module3", "SwiGLU", "puts the SiLU on the w_up branch instead of the gate",
        SWIGLU, "w_down(silu(w_gate x) * w_up x)", written=_cell_mutant(("SwiGLU",), "SwiGLU", (
            "F.silu(self.w_gate(x)) * self.w_up(x)", "self.w_gate(x) * F.silu(self.w_up(x))")), hint="w_up branch"),
    Bug("swiglu-gelu", "module3", "SwiGLU", "gates with GELU, GPT-2's activation",
        SWIGLU, "w_down(silu(w_gate x) * w_up x)", written=_cell_mutant(("SwiGLU",), "SwiGLU", ("F.silu(self.w_gate(x))", "F.gelu(self.w_gate(x))")),
        hint="GELU"),
    # Exercise 12: CapstoneAttention
    Bug("rope-attention-top-left-mask", "module3", "CapstoneAttention", "masks cached queries with a top-left triangle (query_offset=0)",
        ROPE_ATTENTION, "later queries read every cached key", written=_cell_mutant(("CapstoneAttention",), "CapstoneAttention", (
            "query_offset=t_k - t_q)", "query_offset=0)")), hint="top-left aligned"),
    Bug("rope-attention-tiles-kv", "module3", "CapstoneAttention", "shares the K/V heads by tiling them instead of repeating each",
        ROPE_ATTENTION, "query head h reading K/V head h // 2", written=_cell_mutant(("CapstoneAttention",), "CapstoneAttention", (
            "repeat_kv_heads(k, group), repeat_kv_heads(v, group)", "k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)")), hint="tiled"),
    Bug("rope-attention-rotates-v", "module3", "CapstoneAttention", "applies RoPE to the values too",
        ROPE_ATTENTION, "RoPE on q and k only", written=_cell_mutant(("CapstoneAttention",), "CapstoneAttention", (
            "apply_rope(k, positions, self.rope_base), v", "apply_rope(k, positions, self.rope_base), apply_rope(v, positions, self.rope_base)")),
        hint="v was rotated"),
    # Exercise 13: CapstoneBlock and CapstoneLM
    Bug("capstone-post-norm", "module3", "CapstoneLM", "normalises the residual sums (post-norm) instead of each sublayer's input",
        MODEL, "pre-norm residual blocks", written=_cell_mutant(("CapstoneBlock", "CapstoneLM"), "CapstoneLM", (
            "x = x + self.attn(self.attn_norm(x), positions, cache)\n        return x + self.ffn(self.ffn_norm(x))",
            "x = self.attn_norm(x + self.attn(x, positions, cache))\n        return self.ffn_norm(x + self.ffn(x))")), hint="post-norm"),
    Bug("capstone-no-final-norm", "module3", "CapstoneLM", "forgets the final norm before the output head",
        MODEL, "pre-norm residual blocks", written=_cell_mutant(("CapstoneBlock", "CapstoneLM"), "CapstoneLM", (
            "return self.head(self.norm(x))", "return self.head(x)")), hint="final norm is missing"),
    Bug("capstone-positions-from-zero", "module3", "CapstoneLM", "numbers every call's tokens from 0, even after the cached ones",
        MODEL, "through a cache", written=_cell_mutant(("CapstoneBlock", "CapstoneLM"), "CapstoneLM", (
            "positions = torch.arange(start, start + tokens.shape[1])", "positions = torch.arange(tokens.shape[1])"))),
    # Exercise 14: train_step
    Bug("train-step-keeps-stale-gradients", "module3", "train_step", "never clears the gradients of the previous step",
        STEP, "one optimizer step", edit("    optimizer.zero_grad()\n", ""), hint="stale gradients were kept"),
    Bug("train-step-scores-every-position", "module3", "train_step", "averages the loss over every position, the unpredictable ones too",
        STEP, "cross-entropy over the scored positions",
        edit("F.cross_entropy(model(inputs)[scored], targets[scored])", "F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())"),
        hint="every position was scored"),
    Bug("induction-batch-one-k-per-batch", "module3", "induction_batch", "draws one k for the whole batch instead of one per row",
        INDUCTION_BATCH, "k is drawn for each row", edit("k = torch.randint(k_min, k_max + 1, (batch, 1), generator=generator)",
                                                         "k = torch.randint(k_min, k_max + 1, (1, 1), generator=generator).expand(batch, 1)")),
    Bug("induction-batch-scores-repeat-start", "module3", "induction_batch", "also scores the first token of the repeat, which nothing predicts",
        INDUCTION_BATCH, "rows of k distinct tokens written twice", edit("(position[:, :-1] >= k)", "(position[:, :-1] >= k - 1)")),
    Bug("fit-default-weight-decay", "module3", "fit_induction", "keeps AdamW's default weight decay of 0.01",
        FIT, "without weight decay", edit("torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)", "torch.optim.AdamW(model.parameters(), lr=lr)"),
        hint="weight_decay is 0.01"),
    Bug("fit-no-warmup", "module3", "fit_induction", "starts at the full rate, with no warm-up",
        FIT, "the rate rises over warmup steps", edit("min(1.0, (t + 1) / warmup) * (1 - t / steps)", "(1 - t / steps)"), hint="warm-up is missing"),
    Bug("accuracy-counts-every-position", "module3", "induction_accuracy", "averages the hits over every position, filler included",
        ACCURACY, "scored positions only", edit("return float(hits[scored].float().mean())", "return float(hits.float().mean())")),
    # Exercise 15: LayerKV, KVCache and generate
    Bug("generate-cache-feeds-everything", "module3", "generate", "feeds the whole sequence every step even through the cache",
        GENERATE, "with cache=True gives the model's tokens", written=_cell_mutant(("LayerKV", "KVCache", "generate"), "generate", (
            "model(feed if cache else tokens, store)", "model(tokens, store)"))),
    Bug("kv-append-from-zero", "module3", "generate", "writes every appended key at the start of the buffer",
        GENERATE, "with cache=True gives the model's tokens", written=_cell_mutant(("LayerKV", "KVCache", "generate"), "generate", (
            "self.keys[:, :, start:end], self.values[:, :, start:end] = k, v",
            "self.keys[:, :, :end - start], self.values[:, :, :end - start] = k, v"))),
    Bug("kv-append-any-start", "module3", "generate", "accepts a write at any start that fits, overwriting held keys",
        GENERATE, "the cache refuses a write", written=_cell_mutant(("LayerKV", "KVCache", "generate"), "generate", (
            "if start != self.length or end > self.keys.shape[2]:", "if end > self.keys.shape[2]:")), hint="start == self.length"),
    Bug("kv-append-no-capacity", "module3", "generate", "lets a write run past the buffers' end",
        GENERATE, "the cache refuses a write", written=_cell_mutant(("LayerKV", "KVCache", "generate"), "generate", (
            "if start != self.length or end > self.keys.shape[2]:", "if start != self.length:")), hint="max_len"),
]

# ---- Module 5 (5.1 and 5.2) ---------------------------------------------------------------------------------

MASK, SINK, KV_REPEAT, KV_CACHE = "check_additive_mask_contract", "check_sink_attention_contract", "check_kv_repeat_contract", "check_kv_cache_contract"
ONLINE, TILED, ROLLING = "check_online_softmax_contract", "check_tiled_attention_contract", "check_rolling_buffer_contract"
PLAIN_TILES, CAUSAL_TILES = "check_plain_tiled_contract", "check_causal_tiled_contract"
LINEAR, SCAN, LATENT = "check_linear_attention_contract", "check_parallel_scan_contract", "check_latent_absorption_contract"
KIVI, SELECTIVE_STEP = "check_kivi_axes_contract", "check_selective_step_contract"
TILED_BACKWARD, PAGED = "check_tiled_backward_contract", "check_paged_cache_contract"
WORK_EFFICIENT = "check_work_efficient_scan_contract"


MODULE5 = [
    # Exercise 1: make_mask
    Bug("window-off-by-one", "module5_1", "make_mask", "keeps query - key <= window: window + 1 keys",
        MASK, "the window keeps exactly", edit("recent = query - key < window", "recent = query - key <= window"), hint="off by one"),
    Bug("window-hard-coded", "module5_1", "make_mask", "hard-codes the window of the worked example (8) instead of using the argument",
        MASK, "the window keeps exactly", edit("recent = query - key < window", "recent = query - key < 8")),
    Bug("additive-mask-strict-causal", "module5_1", "make_mask", "uses key < query, so a query cannot read its own key",
        MASK, "reads its own key", edit("allowed = key <= query", "allowed = key < query")),
    # Exercise 2: sdpa with a sink
    Bug("sdpa-scale-dk", "module5_1", "sdpa", "scales the scores by 1/d_k instead of 1/sqrt(d_k)",
        SINK, "softmax(Q K^T / sqrt(d_k)) V", edit("* dtype.type(1.0 / math.sqrt(Q.shape[-1]))", "* dtype.type(1.0 / Q.shape[-1])"),
        hint="sqrt(d_k)"),
    Bug("sdpa-softmax-wrong-axis", "module5_1", "sdpa", "sums the exponentials over the query axis",
        SINK, "softmax(Q K^T / sqrt(d_k)) V", edit("denominator = exp_scores.sum(axis=-1, keepdims=True)", "denominator = exp_scores.sum(axis=-2, keepdims=True)"),
        hint="key axis"),
    Bug("sink-in-numerator", "module5_1", "sdpa", "adds the sink's exp to every token's numerator instead of only to the denominator",
        SINK, "sink is an extra logit", edit("denominator = denominator + np.exp(sink - top)", "exp_scores = exp_scores + np.exp(sink - top)")),
    Bug("sdpa-nan-on-fully-masked-row", "module5_1", "sdpa", "divides by a zero denominator on a fully masked row",
        SINK, "empty_row='zero'",
        edit("weights = np.divide(exp_scores, denominator, out=np.zeros_like(exp_scores), where=denominator > 0)", "weights = exp_scores / denominator"),
        hint="NaN"),
    Bug("sdpa-empty-row-message-without-the-way-out", "module5_1", "sdpa", "raises on an empty row with a message that does not name empty_row='zero'",
        SINK, "names the way out", edit("fix the mask, or pass empty_row='zero' to return zeros for them", "fix the mask")),
    # Exercise 3: repeat_kv_heads
    Bug("kv-repeat-tiles", "module5_1", "repeat_kv_heads", "tiles the KV heads with np.concatenate([x] * group) instead of repeating them",
        KV_REPEAT, "repeat, not tile", edit("return np.repeat(x, group, axis=-3)", "return np.concatenate([x] * group, axis=-3)")),
    Bug("kv-repeat-wrong-axis", "module5_1", "repeat_kv_heads", "repeats along the token axis (-2) instead of the head axis (-3)",
        KV_REPEAT, "-> (..., H_kv*group, T, d)", edit("np.repeat(x, group, axis=-3)", "np.repeat(x, group, axis=-2)")),
    # Exercise 4: kv_cache_bytes
    Bug("kv-cache-window-not-clamped", "module5_1", "kv_cache_bytes", "counts a full window even when the context is shorter",
        KV_CACHE, "min(context, window)", edit("else min(context, window)", "else window")),
    Bug("kv-cache-keys-only", "module5_1", "kv_cache_bytes", "forgets the values: counts one vector per token instead of two",
        KV_CACHE, "key and a value", edit("return 2 * kept", "return kept")),
    # Exercise 5: online_softmax_dot
    Bug("online-softmax-no-alpha", "module5_1", "online_softmax_dot", "adds each tile without the alpha rescale of the running sums",
        ONLINE, "running 'l'", (("l = alpha * l + ", "l = l + "), ("u = alpha * u + ", "u = u + ")), hint="without the alpha rescale"),
    Bug("online-softmax-sum-not-rescaled", "module5_1", "online_softmax_dot", "rescales the numerator but not the running sum",
        ONLINE, "running 'l'", edit("l = alpha * l + ", "l = l + ")),
    Bug("online-softmax-max-starts-at-zero", "module5_1", "online_softmax_dot", "starts the running max at 0 instead of -inf",
        ONLINE, "alpha", edit("m, l, u = -math.inf, 0.0, 0.0", "m, l, u = 0.0, 0.0, 0.0")),
    Bug("online-softmax-alpha-inverted", "module5_1", "online_softmax_dot", "writes alpha = exp(m_new - m), the inverse rescale",
        ONLINE, "running 'alpha'", edit("alpha = math.exp(m - m_new)", "alpha = math.exp(m_new - m)")),
    # Exercise 6: tiled_attention_plain
    Bug("plain-tiles-no-alpha-rescale", "module5_1", "tiled_attention_plain", "adds each key tile without rescaling the old accumulator",
        PLAIN_TILES, "plain tiled output equals dense", edit("acc = alpha[:, None] * acc + p @ V[k0:k0 + tile_size]", "acc = acc + p @ V[k0:k0 + tile_size]"),
        hint="alpha"),
    Bug("plain-tiles-no-max-subtraction", "module5_1", "tiled_attention_plain", "exponentiates raw scores, which overflow for large logits",
        PLAIN_TILES, "large logits stay finite",
        (("alpha = np.exp(m - m_new)", "alpha = np.ones(len(Q_b))"), ("p = np.exp(s - m_new[:, None])", "p = np.exp(s)")), hint="running max"),
    Bug("plain-tiles-builds-dense-scores", "module5_1", "tiled_attention_plain", "builds the full T_q x T_k score matrix and calls dense attention",
        PLAIN_TILES, "never holds a T_q x T_k score matrix", written=_dense_plain_tiled_attention),
    # Exercise 7: causal_tiled_attention
    Bug("causal-tiles-visits-future-tiles", "module5_1", "causal_tiled_attention", "computes every key tile, even those entirely in the future",
        CAUSAL_TILES, "only the key tiles on or below",
        (("range(0, q1, tile_size)", "range(0, len(K), tile_size)"), ("k1 = min(k0 + tile_size, q1)", "k1 = min(k0 + tile_size, len(K))"))),
    Bug("causal-tiles-dense-with-paper-count", "module5_1", "causal_tiled_attention",
        "returns dense causal attention and the tile count b (b + 1) / 2 worked out on paper", CAUSAL_TILES,
        "no key tile above the block diagonal is read", written=_dense_causal_with_paper_count(False), hint="0 x NaN"),
    Bug("causal-tiles-dense-prefix-with-paper-count", "module5_1", "causal_tiled_attention",
        "slices the keys to the written prefix, then returns dense causal attention and the tile count worked out on paper",
        CAUSAL_TILES, "never holds a T_q x T_k score matrix", written=_dense_causal_with_paper_count(True)),
    Bug("causal-tiles-diagonal-unmasked", "module5_1", "causal_tiled_attention", "skips the future tiles but forgets to mask inside the diagonal tile",
        CAUSAL_TILES, "causal tiled output equals dense causal", edit("if k1 - 1 > q0:", "if False:"), hint="diagonal"),
    Bug("causal-tiles-skips-diagonal-tile", "module5_1", "causal_tiled_attention", "stops before the diagonal tile (k0 < q0 instead of k0 <= q1 - 1)",
        CAUSAL_TILES, "causal tiled output equals dense causal", edit("range(0, q1, tile_size)", "range(0, q0, tile_size)")),
    # Exercise 8: tiled_attention
    Bug("tiled-no-alpha-rescale", "module5_1", "tiled_attention", "forgets to rescale the accumulator when a tile raises the row max",
        TILED, "any tile size", edit("acc *= alpha[:, None]", "pass"), hint="alpha"),
    Bug("tiled-query-offset-ignored", "module5_1", "tiled_attention", "compares keys with local query indices, ignoring query_start",
        TILED, "query_start places", edit("first, last = query_start + q0, query_start + q1 - 1", "first, last = q0, q1 - 1"),
        hint="query offset ignored"),
    Bug("tiled-window-off-by-one", "module5_1", "tiled_attention", "blocks only keys with query - key > window: window + 1 keys",
        TILED, "window=w keeps the last w keys", edit("blocked |= key_pos <= query_pos - window", "blocked |= key_pos < query_pos - window"),
        hint="off by one"),
    Bug("tiled-nan-from-empty-tile", "module5_1", "tiled_attention", "subtracts a running max of -inf on a tile with no allowed key",
        TILED, "without NaN", edit("safe = np.where(m_new == -np.inf, 0.0, m_new)", "safe = m_new")),
    Bug("tiled-nan-on-fully-masked-row", "module5_1", "tiled_attention", "divides the accumulator by a zero running sum on an empty row",
        TILED, "empty_row='zero'", edit("np.divide(acc, l[:, None], out=acc, where=filled[:, None])", "acc /= l[:, None]")),
    Bug("tiled-builds-dense-scores", "module5_1", "tiled_attention", "builds the full T_q x T_k score matrix and calls dense attention",
        TILED, "never holds a T_q x T_k score matrix", written=_dense_tiled_attention),
    # Exercise 9: tiled_attention_backward
    Bug("tiled-backward-dk-unscaled", "module5_1", "tiled_attention_backward", "forgets the 1 / sqrt(d_k) of the scores in dK",
        TILED_BACKWARD, "dK equals autograd's", edit("dK[k0:k1] += ds.T @ Q[q0:q1] * scale", "dK[k0:k1] += ds.T @ Q[q0:q1]"), hint="sqrt(d_k)"),
    Bug("tiled-backward-d-from-dp", "module5_1", "tiled_attention_backward", "subtracts the row sum of dO instead of D = rowsum(dO * O)",
        TILED_BACKWARD, "dQ equals autograd's", edit("D = (dO * O).sum(axis=1)", "D = dO.sum(axis=1)")),
    Bug("tiled-backward-dense-p", "module5_1", "tiled_attention_backward", "builds the whole T x T matrix P from the lse and differentiates it at once",
        TILED_BACKWARD, "never holds a T_q x T_k matrix", written=_dense_backward("dense")),
    Bug("tiled-backward-renormalises-rows", "module5_1", "tiled_attention_backward", "renormalises each row of P itself instead of trusting the saved lse",
        TILED_BACKWARD, "a shifted lse halves it", written=_dense_backward("renormalised")),
    Bug("tiled-backward-calls-autograd", "module5_1", "tiled_attention_backward", "asks torch's autograd for the gradients of dense attention",
        TILED_BACKWARD, "autograd is never called", written=_dense_backward("autograd")),
    # Exercise 10: reserve_slots
    Bug("paged-no-copy-on-write", "module5_1", "reserve_slots", "writes the first divergent token into the block another sequence shares",
        PAGED, "copy-on-write at the first divergent token", edit("elif refs[table[-1]] > 1:", "elif False:")),
    Bug("paged-cow-keeps-the-old-reference", "module5_1", "reserve_slots", "copies a shared block but leaves the old block's count as it was",
        PAGED, "copy-on-write moves one reference", edit("refs[table[-1]], refs[new] = refs[table[-1]] - 1, 1", "refs[new] = 1")),
    Bug("paged-copies-every-partly-filled-block", "module5_1", "reserve_slots", "copies the last block on every write, shared or not",
        PAGED, "a growing sequence takes blocks", edit("elif refs[table[-1]] > 1:", "elif refs[table[-1]] >= 1:")),
    Bug("paged-block-per-token", "module5_1", "reserve_slots", "takes a new block for every token instead of filling the last one",
        PAGED, "a growing sequence takes blocks", edit("if p % size == 0:", "if True:")),
    # Module 5.2, Exercise 1: rolling_buffer_step
    Bug("rolling-buffer-reads-unfilled-slots", "module5_2", "rolling_buffer_step", "attends over every slot, also those no token has filled yet",
        ROLLING, "filled slots", edit("held = min(t + 1, len(keys))", "held = len(keys)"), hint="filled slots only"),
    Bug("rolling-buffer-keeps-w-plus-1", "module5_2", "rolling_buffer_step", "attends over the w keys held and the new one before overwriting: w + 1 keys",
        ROLLING, "filled slots of the buffer it was given",
        (("    keys[slot], values[slot] = k, v\n", "    old_keys, old_values = np.vstack([keys[:min(t, len(keys))], k]), np.vstack([values[:min(t, len(keys))], v])\n"
          "    keys[slot], values[slot] = k, v\n"), ("scores = keys[:held] @ q", "scores = old_keys @ q"), ("weights @ values[:held]", "weights @ old_values"))),
    Bug("rolling-buffer-wrong-slot", "module5_2", "rolling_buffer_step", "writes token t into slot (t + 1) % w, evicting a token still in the window",
        ROLLING, "slot t % window", edit("slot = t % len(keys)", "slot = (t + 1) % len(keys)")),
    Bug("rolling-buffer-softmax-without-max", "module5_2", "rolling_buffer_step", "takes np.exp of the raw scores, without subtracting the max",
        ROLLING, "+-1000", edit("weights = np.exp(scores - scores.max())", "weights = np.exp(scores)"), hint="largest score"),
    Bug("rolling-buffer-keeps-history", "module5_2", "rolling_buffer_step", "keeps every token in a private list and masks it, as sdpa with a window mask",
        ROLLING, "buffer it was given", written=_history_rolling_step),
    Bug("rolling-buffer-grows", "module5_2", "rolling_buffer_step", "appends each token to the buffer and reads the last w",
        ROLLING, "never grows", written=_growing_rolling_step, hint="full attention's cache"),
    Bug("rolling-buffer-shifts-every-slot", "module5_2", "rolling_buffer_step", "shifts the whole buffer one slot per token (np.roll) instead of overwriting one",
        ROLLING, "touches no other slot", written=_shifting_rolling_step),
    # Module 5.2, Exercise 2: linear_attention_step
    Bug("linear-attention-no-normaliser", "module5_2", "linear_attention_step", "divides by the sum of the query features instead of q . z",
        LINEAR, "62 / 15", edit("return S, z, q @ S / (q @ z)", "return S, z, q @ S / q.sum()")),
    Bug("linear-attention-reads-before-update", "module5_2", "linear_attention_step", "reads S and z before adding token i, so a token never sees itself",
        LINEAR, "62 / 15", (("    S = S + np.outer(k, v)", "    out = q @ S / (q @ z)\n    S = S + np.outer(k, v)"), ("return S, z, q @ S / (q @ z)", "return S, z, out"))),
    Bug("linear-attention-quadratic-history", "module5_2", "linear_attention_step", "keeps the tokens and forms the n x n weights, rebuilding S and z from them",
        LINEAR, "continues the sums it is given", written=_quadratic_linear_step),
    # Module 5.2, Exercise 3: parallel_scan
    Bug("parallel-scan-uses-updated-a", "module5_2", "parallel_scan", "updates a before computing b, so b uses the new a",
        SCAN, "loop", edit("a, b = a_prev * a, a * b_prev + b", "a = a_prev * a\n        b = a * b_prev + b")),
    # Module 5.2, Exercise 4: mla_absorbed_attention
    Bug("latent-absorption-forgets-rope", "module5_2", "mla_absorbed_attention", "scores only the latent part and drops q_rope . k_rope",
        LATENT, "RoPE branch", edit("(q_latent @ latent.T + q_rope @ k_rope.T)", "(q_latent @ latent.T)")),
    Bug("latent-absorption-scale-without-rope", "module5_2", "mla_absorbed_attention", "scales by sqrt(d_nope), forgetting the RoPE width",
        LATENT, "absorbed attention equals expanded attention", edit("math.sqrt(q_nope.shape[-1] + q_rope.shape[-1])", "math.sqrt(q_nope.shape[-1])"),
        hint="sqrt(d_nope + d_rope)"),
    Bug("latent-absorption-expands-keys", "module5_2", "mla_absorbed_attention", "returns mla_expanded_attention, which builds latent @ W_uk",
        LATENT, "never formed", written=_expanded_latent_attention, hint="built the expanded key"),
    # Module 5.2, Exercise 5: kivi_cache
    Bug("kivi-keys-per-token", "module5_2", "kivi_cache", "gives keys one scale per token, so the large channels crush the small ones",
        KIVI, "keys get one scale per channel", edit("K_hat = dequantize(*quantize(K, bits, shared_axis=0))", "K_hat = dequantize(*quantize(K, bits, shared_axis=1))"),
        hint="axis=0"),
    Bug("kivi-values-per-channel", "module5_2", "kivi_cache", "gives values one scale per channel instead of one per token",
        KIVI, "values get one scale per token", edit("V_hat = dequantize(*quantize(V, bits, shared_axis=1))", "V_hat = dequantize(*quantize(V, bits, shared_axis=0))")),
    # Module 5.2, Exercise 6: work_efficient_rounds
    Bug("work-efficient-scan-is-hillis-steele", "module5_2", "work_efficient_rounds", "plans Exercise 3's scan: every position merges every round",
        WORK_EFFICIENT, "at most 2T - 2 merges", written=_hillis_steele_rounds, hint="Hillis-Steele"),
    Bug("work-efficient-scan-is-the-loop", "module5_2", "work_efficient_rounds", "plans one merge per round, the sequential loop",
        WORK_EFFICIENT, "at most 2 ceil(log2 T) - 1 rounds", written=_sequential_rounds),
    Bug("work-efficient-scan-no-down-sweep", "module5_2", "work_efficient_rounds", "stops after the up-sweep, so most positions miss earlier blocks",
        WORK_EFFICIENT, "every state of the loop", edit("for d in reversed(strides[:-1]):", "for d in []:"), hint="down-sweep"),
    Bug("work-efficient-scan-down-sweep-off-by-d", "module5_2", "work_efficient_rounds", "starts the down-sweep at 2d - 1, merging blocks already complete",
        WORK_EFFICIENT, "every state of the loop", edit("range(3 * d - 1, T, 2 * d)", "range(2 * d - 1, T, 2 * d)")),
    # Module 5.2, the selective step (a checked function since Exercise 6 became the scan)
    Bug("selective-step-euler-write", "module5_2", "selective_step", "writes delta * b * x (Euler) instead of the zero-order hold's (keep - 1) / a * b * x",
        SELECTIVE_STEP, "the marked token writes", edit("h_new = keep * h + (keep - 1.0) / a * b * x", "h_new = keep * h + delta * b * x"),
        hint="zero-order hold"),
    Bug("selective-step-reads-old-state", "module5_2", "selective_step", "returns c times the old state instead of the new one",
        SELECTIVE_STEP, "the marked token writes", edit("return h_new, c * h_new", "return h_new, c * h")),
]

CATALOG = MODULE3 + MODULE5


@dataclass(frozen=True)
class Spelling:
    """A correct solution written another way: its contract must pass it, because it behaves the same."""

    id: str
    module: str
    target: str
    contract: str
    edits: tuple[tuple[str, str], ...]

    def build(self):
        """The rewritten implementation, ready to hand to its contract."""
        return mutant(notebook(self.module), self.target, *self.edits)


# The contracts judge behaviour, not spelling: each of these must pass.
SPELLINGS = (
    # -1e9 instead of -inf: every row with an allowed key gets the same weights (exp underflows to exactly 0),
    # and empty rows follow the stated policy either way.
    Spelling("attention-large-negative-fill", "module3", "scaled_dot_product_attention", ATTENTION, edit('float("-inf")', "-1e9")),
    Spelling("attention-torch-softmax-on-safe-rows", "module3", "scaled_dot_product_attention", ATTENTION, edit(
        SOFTMAX_LINES,
        "    weights = torch.softmax(scores.masked_fill(empty_rows[..., None], 0.0), dim=-1)"
        ".masked_fill(empty_rows[..., None], 0.0)\n",
    )),
)
