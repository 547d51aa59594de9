"""Property-based tests (hypothesis) of both notebooks' public functions.

Two kinds: the fast or structured forms equal their plain definitions on random shapes and masks
(tiled = dense, GQA = MHA with repeated heads, the online softmax ignores a common shift, the rolling
buffer = masked attention, ...); and random bad inputs (wrong types and ranks, empty axes, NaN and
infinity, zero or negative sizes, bools for ints, mismatched shapes) raise TypeError or ValueError and
nothing else, and never return NaN from inputs that hold none.

Every test is derandomized and uses no example database, so a CI run is reproducible. Select this
file's tests with ``-m property``.
"""

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import NOTEBOOK_SOURCES, notebook

pytestmark = pytest.mark.property

PROPERTY = settings(max_examples=30, deadline=None, derandomize=True, database=None)
BAD_INPUT = settings(max_examples=50, deadline=None, derandomize=True, database=None)
SEEDS = st.integers(0, 2**16)


def m3():
    return notebook("module3")


def m51():
    return notebook("module5_1")


def m52():
    return notebook("module5_2")


# ---- Module 3: attention against PyTorch, GQA against MHA -------------------------------------------------


def random_batch(data):
    """Leading shapes of 0-2 axes for q, k and v that broadcast together, their joint shape, and a mask's that broadcasts to it."""
    full = data.draw(st.lists(st.integers(1, 3), max_size=2), label="batch")
    own = [tuple(1 if data.draw(st.booleans(), label=f"{name} broadcasts") else n for n in full) for name in ("q", "k", "v", "mask")]
    joint = tuple(np.broadcast_shapes(*own[:3]))
    mask = tuple(1 if m == 1 else j for m, j in zip(own[3], joint))
    return joint, own[:3], mask


@PROPERTY
@given(data=st.data(), t_q=st.integers(1, 6), t_k=st.integers(1, 6), d_k=st.integers(1, 5), d_v=st.integers(1, 4),
       density=st.floats(0.0, 1.0), seed=SEEDS)
def test_attention_equals_pytorch_on_random_shapes_and_masks(data, t_q, t_k, d_k, d_v, density, seed):
    batch, (bq, bk, bv), bm = random_batch(data)
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(*bq, t_q, d_k, dtype=torch.float64, generator=gen), torch.randn(*bk, t_k, d_k, dtype=torch.float64, generator=gen)
    v = torch.randn(*bv, t_k, d_v, dtype=torch.float64, generator=gen)
    allowed = torch.rand(*bm, t_q, t_k, generator=gen) < density
    joint = (*batch, t_q, t_k)
    empty = ~allowed.expand(joint).any(-1)  # (..., T_q) rows with nothing to read
    result = m3()["scaled_dot_product_attention"](q, k, v, allowed, empty_row="zero")
    expand = [t.expand(*batch, *t.shape[-2:]) for t in (q, k, v)]
    library = F.scaled_dot_product_attention(*expand, attn_mask=allowed.expand(joint) | empty[..., None])
    library = library.masked_fill(empty[..., None], 0.0)  # the zero policy for fully masked rows
    torch.testing.assert_close(result.output, library, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(result.weights.sum(-1), (~empty).double(), atol=1e-12, rtol=0)
    assert torch.equal(result.empty_rows, empty)
    if not bool(empty.any()):  # with every row readable, the default policy agrees
        assert torch.equal(m3()["scaled_dot_product_attention"](q, k, v, allowed).output, result.output)


@PROPERTY
@given(n_kv=st.integers(1, 3), group=st.integers(1, 3), d_head=st.integers(1, 4), batch=st.integers(1, 2),
       length=st.integers(1, 6), causal=st.booleans(), padded=st.booleans(), seed=SEEDS)
def test_gqa_module_equals_mha_with_repeated_kv_heads(n_kv, group, d_head, batch, length, causal, padded, seed):
    layer = m3()["MultiHeadSelfAttention"]
    heads = n_kv * group
    torch.manual_seed(seed)
    gqa = layer(heads * d_head, heads, n_kv, causal=causal).double()
    mha = layer(heads * d_head, heads, heads, causal=causal).double()
    with torch.no_grad():
        mha.q_proj.weight.copy_(gqa.q_proj.weight)
        mha.out_proj.weight.copy_(gqa.out_proj.weight)
        for name in ("k_proj", "v_proj"):  # K/V head g serves query heads g*group .. (g+1)*group - 1
            shared = getattr(gqa, name).weight.unflatten(0, (n_kv, d_head))  # (H_kv, d, d_model)
            getattr(mha, name).weight.copy_(shared.repeat_interleave(group, dim=0).flatten(0, 1))
        x = torch.randn(batch, length, heads * d_head, dtype=torch.float64)
        valid = torch.rand(batch, length) < 0.7 if padded else None
        torch.testing.assert_close(gqa(x, token_valid=valid, empty_row="zero"), mha(x, token_valid=valid, empty_row="zero"),
                                   atol=1e-12, rtol=1e-12)
    assert gqa.kv_parameter_count() * group == mha.kv_parameter_count()


# ---- Module 5: the fast forms equal their definitions ------------------------------------------------------


@PROPERTY
@given(
    n_q=st.integers(1, 20), extra_keys=st.integers(0, 12), d=st.integers(1, 6), tile=st.integers(1, 9),
    causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 8)), sink=st.one_of(st.none(), st.floats(-3, 3)),
    seed=SEEDS,
)
def test_tiled_attention_equals_dense_attention(n_q, extra_keys, d, tile, causal, window, sink, seed):
    nb = m51()
    rng = np.random.default_rng(seed)
    n_k = n_q + extra_keys
    Q, K, V = rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d)), rng.standard_normal((n_k, 3))
    window = window if causal else None
    start = extra_keys if causal else 0  # the queries are the last n_q tokens: a cached prefix
    distance = (start + np.arange(n_q))[:, None] - np.arange(n_k)[None, :]
    allowed = (distance >= 0) if causal else np.ones((n_q, n_k), dtype=bool)
    if window is not None:
        allowed &= distance < window
    dense = nb["sdpa"](Q, K, V, nb["additive_mask"](allowed), sink=sink)
    tiled = nb["tiled_attention"](Q, K, V, tile_size=tile, causal=causal, window=window, query_start=start, sink=sink)
    np.testing.assert_allclose(tiled, dense, atol=1e-12, rtol=1e-12)


@PROPERTY
@given(n_q=st.integers(1, 12), n_k=st.integers(1, 12), tile=st.integers(1, 7), density=st.floats(0.05, 1.0), seed=SEEDS)
def test_tiled_attention_equals_dense_attention_under_a_random_mask(n_q, n_k, tile, density, seed):
    nb = m51()
    rng = np.random.default_rng(seed)
    Q, K, V = rng.standard_normal((n_q, 3)), rng.standard_normal((n_k, 3)), rng.standard_normal((n_k, 2))
    mask = np.where(rng.random((n_q, n_k)) < density, rng.normal(0.0, 1.0, (n_q, n_k)), -np.inf)
    dense = nb["sdpa"](Q, K, V, mask, empty_row="zero")
    np.testing.assert_allclose(nb["tiled_attention"](Q, K, V, mask, tile_size=tile, empty_row="zero"), dense, atol=1e-12, rtol=1e-12)


@PROPERTY
@given(n=st.integers(1, 30), window=st.integers(1, 12), seed=SEEDS)
def test_rolling_buffer_decode_equals_masked_attention(n, window, seed):
    nb = m52()
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((n, 4)) for _ in range(3))
    outputs, largest = nb["rolling_window_decode"](Q, K, V, window)
    assert largest == min(n, window)
    np.testing.assert_allclose(outputs, nb["sdpa"](Q, K, V, nb["make_mask"](n, window)), atol=1e-12)


@PROPERTY
@given(logits=st.lists(st.floats(-50, 50), min_size=1, max_size=30), cuts=st.lists(st.integers(1, 29), max_size=6))
def test_online_softmax_equals_direct_softmax_for_any_tiling(logits, cuts):
    values = np.linspace(-1.0, 1.0, len(logits))
    edges = sorted({c for c in cuts if c < len(logits)})
    out, trace = m51()["online_softmax_dot"](np.split(np.array(logits), edges), np.split(values, edges))
    weights = np.exp(np.array(logits) - max(logits))
    assert len(trace) == len(edges) + 1
    assert math.isclose(out, weights @ values / weights.sum(), rel_tol=1e-9, abs_tol=1e-12)


@PROPERTY
@given(logits=st.lists(st.floats(-50, 50), min_size=1, max_size=30), cuts=st.lists(st.integers(1, 29), max_size=6),
       shift=st.floats(-1000, 1000))
def test_online_softmax_is_invariant_under_a_common_shift(logits, cuts, shift):
    online = m51()["online_softmax_dot"]
    values = np.cos(np.arange(len(logits)))
    edges = sorted({c for c in cuts if c < len(logits)})
    out, trace = online(np.split(np.array(logits), edges), np.split(values, edges))
    shifted_out, shifted_trace = online(np.split(np.array(logits) + shift, edges), np.split(values, edges))
    assert math.isclose(shifted_out, out, rel_tol=1e-9, abs_tol=1e-9)
    for before, after in zip(trace, shifted_trace):  # the max moves with the logits; alpha, l and u do not
        assert math.isclose(after["m"], before["m"] + shift, rel_tol=1e-12, abs_tol=1e-9)
        for key in ("alpha", "l", "u"):
            assert math.isclose(after[key], before[key], rel_tol=1e-9, abs_tol=1e-9), key


@PROPERTY
@given(n_kv=st.integers(1, 4), group=st.integers(1, 4), t=st.integers(1, 6), seed=SEEDS)
def test_gqa_equals_mha_with_copied_heads(n_kv, group, t, seed):
    nb = m51()
    rng = np.random.default_rng(seed)
    H = n_kv * group
    Q, K, V = rng.standard_normal((H, t, 3)), rng.standard_normal((n_kv, t, 3)), rng.standard_normal((n_kv, t, 2))
    copied_K = np.stack([K[h // group] for h in range(H)])
    copied_V = np.stack([V[h // group] for h in range(H)])
    mask = nb["make_mask"](t)
    np.testing.assert_allclose(nb["gqa_attention"](Q, K, V, mask), nb["sdpa"](Q, copied_K, copied_V, mask), atol=1e-12)


@PROPERTY
@given(n=st.integers(1, 40), window=st.integers(1, 40), n_sink=st.integers(0, 5))
def test_mask_pair_count_matches_its_formula(n, window, n_sink):
    n_sink = min(n_sink, n)
    allowed = np.isfinite(m51()["make_mask"](n, window, n_sink))
    sinks_outside_window = sum(max(0, min(n_sink, i - window + 1)) for i in range(n))
    assert allowed.sum() == sum(min(i + 1, window) for i in range(n)) + sinks_outside_window
    assert not np.triu(allowed, 1).any()


@PROPERTY
@given(a=st.lists(st.floats(-1.5, 1.5), min_size=1, max_size=70), seed=SEEDS)
def test_parallel_scan_equals_the_loop(a, seed):
    b = np.random.default_rng(seed).standard_normal(len(a))
    h, loop = 0.0, []
    for a_t, b_t in zip(a, b):
        h = a_t * h + b_t
        loop.append(h)
    states, rounds = m52()["parallel_scan"](a, b)
    np.testing.assert_allclose(states, loop, atol=1e-9, rtol=1e-9)
    assert rounds == (math.ceil(math.log2(len(a))) if len(a) > 1 else 0)


@PROPERTY
@given(n=st.integers(1, 25), d_k=st.integers(1, 5), d_v=st.integers(1, 4), seed=SEEDS)
def test_linear_attention_running_sum_equals_quadratic_form(n, d_k, d_v, seed):
    nb = m52()
    rng = np.random.default_rng(seed)
    Q, K, V = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)), rng.standard_normal((n, d_v))
    out, S, z = nb["linear_attention_recurrent"](Q, K, V)
    np.testing.assert_allclose(out, nb["linear_attention_quadratic"](Q, K, V), atol=1e-10)
    assert S.shape == (d_k, d_v) and z.shape == (d_k,)


@PROPERTY
@given(context=st.integers(1, 10**7), windows=st.lists(st.one_of(st.none(), st.integers(1, 5000)), min_size=1, max_size=8))
def test_kv_cache_bytes_is_exact_and_grows_only_with_full_layers(context, windows):
    size = m51()["kv_cache_bytes"]
    assert isinstance(size(context, windows, 8, 64), int)
    assert size(context, windows, 8, 64) == 2 * 8 * 64 * 2 * sum(context if w is None else min(context, w) for w in windows)
    assert size(context + 5000, windows, 8, 64) - size(context + 4999, windows, 8, 64) == 2048 * windows.count(None)


@PROPERTY
@given(seed=SEEDS, t_q=st.integers(1, 5), extra=st.integers(0, 5))
def test_absorbed_latent_attention_equals_expanded(seed, t_q, extra):
    nb = m52()
    rng = np.random.default_rng(seed)
    H, T_k, d_c, d_nope, d_rope, d_v, d_model = 3, t_q + extra, 4, 5, 2, 3, 6
    args = (rng.standard_normal((H, t_q, d_nope)), rng.standard_normal((H, t_q, d_rope)), rng.standard_normal((T_k, d_c)),
            rng.standard_normal((T_k, d_rope)), rng.standard_normal((H, d_c, d_nope)), rng.standard_normal((H, d_c, d_v)),
            rng.standard_normal((H, d_v, d_model)))
    allowed = np.arange(T_k)[None, :] <= (extra + np.arange(t_q))[:, None]
    mask = nb["additive_mask"](allowed)
    np.testing.assert_allclose(nb["mla_absorbed_attention"](*args, mask), nb["mla_expanded_attention"](*args, mask), atol=1e-10)


# ---- random bad inputs: only TypeError or ValueError, never a silent NaN -----------------------------------


@st.composite
def junk_arrays(draw):
    """A NumPy array of random rank (0-4), sizes (0 allowed), dtype and content (NaN and infinity allowed)."""
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.float16, np.int64, np.bool_]))
    values = np.random.default_rng(draw(st.integers(0, 2**16))).normal(0.0, 3.0, shape)
    special = draw(st.sampled_from([None, np.nan, np.inf, -np.inf]))
    if special is not None and values.size:
        values.flat[draw(st.integers(0, values.size - 1))] = special
    with np.errstate(invalid="ignore", over="ignore"):
        return values.astype(dtype)


@st.composite
def junk_tensors(draw):
    """A torch tensor made the same way, in a torch dtype."""
    array = draw(junk_arrays())
    dtype = draw(st.sampled_from([torch.float64, torch.float32, torch.int64, torch.bool]))
    with np.errstate(invalid="ignore"):
        return torch.from_numpy(np.ascontiguousarray(array.astype(np.float64))).to(dtype)


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([math.nan, math.inf, -math.inf, -1.5, 0.0, 0.5, 2.5]),
    st.text(max_size=3), st.lists(st.sampled_from([0.0, 1.0, -2.0, math.nan]), max_size=4),
    st.lists(st.lists(st.integers(-2, 2), max_size=3), max_size=3), junk_arrays(), junk_tensors(), st.just(object()),
)


@st.composite
def reshaped(draw, valid):
    """``valid`` (a tensor or an array) with one defect: an axis resized (0 allowed), added or dropped, a new dtype, or a NaN/inf."""
    is_tensor = isinstance(valid, torch.Tensor)
    values = valid.detach().double().numpy() if is_tensor else np.asarray(valid, dtype=float)
    defect = draw(st.sampled_from(["resize", "add axis", "drop axis", "dtype", "non-finite"]))
    if defect == "resize" and values.ndim:
        axis, size = draw(st.integers(0, values.ndim - 1)), draw(st.integers(0, 5))
        values = np.resize(values, values.shape[:axis] + (size,) + values.shape[axis + 1:])
    elif defect == "add axis":
        values = values[None] if draw(st.booleans()) else values[..., None]
    elif defect == "drop axis" and values.ndim:
        values = values[0] if draw(st.booleans()) else values[..., 0]
    elif defect == "non-finite" and values.size:
        values = values.copy()
        values.flat[draw(st.integers(0, values.size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    if is_tensor:
        kinds = [torch.float64, torch.float32, torch.int64, torch.bool]
        dtype = draw(st.sampled_from(kinds)) if defect == "dtype" else valid.dtype
        return torch.from_numpy(np.ascontiguousarray(values)).to(dtype) if dtype != torch.bool else torch.from_numpy(values != 0)
    dtype = draw(st.sampled_from([np.float64, np.float16, np.int64, np.bool_, np.complex128])) if defect == "dtype" else np.asarray(valid).dtype
    with np.errstate(invalid="ignore", over="ignore"):
        return values.astype(dtype)


def near(valid):
    """Bad values for an argument whose valid value is ``valid``: mostly of the same kind, sometimes anything at all."""
    if isinstance(valid, (torch.Tensor, np.ndarray)):
        same_kind = reshaped(valid)
    elif isinstance(valid, bool):
        same_kind = st.one_of(st.integers(-1, 2), st.none(), st.text(max_size=2))
    elif isinstance(valid, int):
        same_kind = st.one_of(st.integers(-3, 12), st.booleans(), st.sampled_from([2.0, 1.5, math.nan]), st.text(max_size=2))
    elif isinstance(valid, float):
        same_kind = st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 0.0, 1e6]), st.booleans(), st.integers(-2, 2))
    elif isinstance(valid, (list, tuple)) and valid:
        same_kind = st.one_of(
            st.just(type(valid)()), st.lists(st.one_of(st.sampled_from(list(valid)), JUNK), min_size=1, max_size=len(valid) + 1),
            st.just(valid[:-1]), st.just([valid[0]] * (len(valid) + 2)),
        )
    else:
        same_kind = JUNK
    return st.one_of(same_kind, same_kind, JUNK)


def any_value(x, numeric_test):
    """Whether any number inside ``x`` (tensors, arrays, floats, containers, dataclasses) passes ``numeric_test``."""
    if isinstance(x, torch.Tensor):
        return x.is_floating_point() and bool(numeric_test(x.detach().double().numpy()).any())
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc" and bool(numeric_test(x.astype(complex if x.dtype.kind == "c" else float)).any())
    if isinstance(x, float):
        return bool(numeric_test(np.array(x)))
    if isinstance(x, dict):
        return any(any_value(v, numeric_test) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(any_value(v, numeric_test) for v in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return any(any_value(getattr(x, f.name), numeric_test) for f in dataclasses.fields(x))
    return False


def has_nan(x):
    return any_value(x, np.isnan)


def r(*shape, dtype=torch.float64):
    """A small random tensor."""
    return torch.randn(*shape, dtype=dtype)


def a(*shape):
    """A small random array."""
    return np.random.default_rng(0).standard_normal(shape)


def attention_layer(x, token_valid=None, empty_row="error", d_model=8, n_heads=2, n_kv_heads=1, causal=True):
    """Build a MultiHeadSelfAttention and run it once."""
    return m3()["MultiHeadSelfAttention"](d_model, n_heads, n_kv_heads, causal=causal)(x, token_valid=token_valid, empty_row=empty_row)


def feed_forward(x, d_model=8, d_ff=16):
    return m3()["FeedForward"](d_model, d_ff)(x)


def decoder_block(x, d_model=8, n_heads=2, d_ff=16, n_kv_heads=None):
    return m3()["DecoderBlock"](d_model, n_heads, d_ff, n_kv_heads)(x)


def causality_probe(token_ids, causal=True, vocab_size=11, width=8):
    return m3()["CausalityProbe"](causal=causal, vocab_size=vocab_size, width=width)(token_ids)


def tiny_lm(token_ids, vocab_size=6, d_model=8, n_heads=2, d_ff=16, max_length=8):
    return m3()["TinyLM"](vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, d_ff=d_ff, max_length=max_length)(token_ids)


def tiny_lm_generate(token_ids, new_tokens=2):
    return m3()["TinyLM"](d_model=8, n_heads=2, d_ff=16, max_length=8).generate(token_ids, new_tokens)


def adamw_step(parameters, lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    """Build the notebook's AdamW and take one step on a quadratic loss."""
    optimizer = m3()["AdamW"](parameters, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    for p in optimizer.parameters:
        p.grad = torch.ones_like(p)
    optimizer.step()
    return [p.detach() for p in optimizer.parameters]


def ids(*shape, high=6):
    return torch.randint(0, high, shape)


def additive(allowed):
    return np.where(allowed, 0.0, -np.inf)


# Each public function with one valid call (positional args, keyword args), built fresh for every example.
VALID_CALLS = {
    "module3": {
        "attention_cost": lambda: ((4, 8), {}),
        "kv_cache_bytes_per_token": lambda: ((2, 2, 4), {"bytes_per_value": 2}),
        "softmax": lambda: ((r(3, 4),), {"dim": -1}),
        "sinusoidal_encoding": lambda: ((5, 4), {"base": 100.0, "dtype": torch.float64}),
        "causal_allowed": lambda: ((3, 5), {"query_offset": 1}),
        "scaled_dot_product_attention": lambda: ((r(2, 3, 4), r(2, 5, 4), r(2, 5, 3), torch.ones(3, 5, dtype=torch.bool).tril(2)),
                                                 {"empty_row": "error"}),
        "softmax_jacobian": lambda: ((torch.softmax(r(2, 4), -1),), {}),
        "jacobian_norm": lambda: ((torch.softmax(r(2, 4), -1),), {}),
        "saturation_experiment": lambda: (((2, 4),), {"n_keys": 4, "trials": 3, "seed": 0}),
        "split_heads": lambda: ((r(2, 3, 8), 2), {}),
        "merge_heads": lambda: ((r(2, 2, 3, 4),), {}),
        "repeat_kv_heads": lambda: ((r(2, 2, 3, 4), 2), {}),
        "MultiHeadSelfAttention": lambda: ((attention_layer, r(2, 5, 8, dtype=torch.float32)),
                                           {"token_valid": torch.ones(2, 5, dtype=torch.bool), "empty_row": "zero",
                                            "d_model": 8, "n_heads": 2, "n_kv_heads": 1, "causal": True}),
        "layer_norm": lambda: ((r(3, 4), r(4), r(4)), {"eps": 1e-5}),
        "FeedForward": lambda: ((feed_forward, r(2, 3, 8, dtype=torch.float32)), {"d_model": 8, "d_ff": 16}),
        "DecoderBlock": lambda: ((decoder_block, r(2, 3, 8, dtype=torch.float32)), {"d_model": 8, "n_heads": 2, "d_ff": 16, "n_kv_heads": 1}),
        "transformer_parameter_floor": lambda: ((8, 16), {}),
        "CausalityProbe": lambda: ((causality_probe, ids(1, 5, high=11)), {"causal": True, "vocab_size": 11, "width": 8}),
        "TinyLM": lambda: ((tiny_lm, ids(2, 5)), {"vocab_size": 6, "d_model": 8, "n_heads": 2, "d_ff": 16, "max_length": 8}),
        "TinyLM.generate": lambda: ((tiny_lm_generate, ids(1, 3)), {"new_tokens": 2}),
        "AdamW": lambda: ((adamw_step, [torch.zeros(3, requires_grad=True)]),
                          {"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}),
        "token_distribution": lambda: (([2.0, 1.0, 0.5, -1.0],), {"temperature": 0.8, "top_k": 3, "top_p": 0.9}),
        "greedy_trace": lambda: (([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]], 0, 2), {}),
    },
    "module5_1": {
        "kv_bytes_per_token": lambda: ((2, 2, 4), {"bytes_per_value": 2}),
        "context_cost": lambda: ((16,), {"layers": 2, "kv_heads": 2, "head_dim": 4, "bytes_per_value": 2}),
        "make_mask": lambda: ((6,), {"window": 3, "n_sink": 1}),
        "additive_mask": lambda: ((np.tri(4, dtype=bool),), {}),
        "sdpa": lambda: ((a(2, 4, 3), a(2, 4, 3), a(2, 4, 2), additive(np.tri(4, dtype=bool))),
                         {"sink": 0.5, "empty_row": "error", "return_weights": True}),
        "repeat_kv_heads": lambda: ((a(2, 3, 4), 4), {}),
        "gqa_attention": lambda: ((a(4, 3, 2), a(2, 3, 2), a(2, 3, 2), additive(np.tri(3, dtype=bool))), {}),
        "torch_sdpa_explicit": lambda: ((r(2, 3, 4), r(2, 3, 4), r(2, 3, 2), torch.ones(3, 3, dtype=torch.bool).tril()), {}),
        "kv_cache_bytes": lambda: ((100, [None, 4], 2, 4), {"bytes_per_value": 2}),
        "mla_bytes_per_token": lambda: ((2, 8, 4), {"bytes_per_value": 2}),
        "online_softmax_dot": lambda: (([[2.0, 1.0], [3.0]], [[1.0, 2.0], [3.0]]), {}),
        "tiled_attention": lambda: ((a(5, 3), a(5, 3), a(5, 2), np.zeros((5, 5))),
                                    {"tile_size": 2, "sink": None, "empty_row": "error", "causal": True, "window": 3, "query_start": 0}),
        "block_kinds": lambda: ((np.tri(5, dtype=bool), 2), {}),
        "tiled_attention_plain": lambda: ((a(5, 3), a(4, 3), a(4, 2)), {"tile_size": 2}),
        "causal_tiled_attention": lambda: ((a(5, 3), a(5, 3), a(5, 2)), {"tile_size": 2}),
        "attention_hbm_accesses": lambda: ((1024, 64, 4096), {}),
        "tiled_logsumexp": lambda: ((a(5, 3), a(5, 3)), {"tile_size": 2, "causal": True}),
        "tiled_attention_backward": lambda: ((a(5, 3), a(5, 3), a(5, 2), a(5, 2), a(5, 2), a(5)), {"tile_size": 2, "causal": True}),
        "reserve_slots": lambda: (({"block_size": 2, "refs": [0, 0, 0], "tables": {}, "lengths": {}}, "A", 3), {}),
    },
    "module5_2": {
        "pairs_computed": lambda: ((additive(np.tri(4, dtype=bool)),), {}),
        "receptive_field": lambda: ((6, 2, 2), {}),
        "reach": lambda: ((3, 2), {}),
        "rolling_window_decode": lambda: ((a(5, 3), a(5, 3), a(5, 2), 3), {}),
        "rolling_buffer_step": lambda: ((a(3, 3), a(3, 2), 4, a(3), a(3), a(2)), {}),
        "global_local_allowed": lambda: ((8, 3), {"global_tokens": (0,)}),
        "strided_allowed": lambda: ((8, 2), {}),
        "shortlist_experiment": lambda: ((), {"trials": 2, "length": 16, "dim": 8, "index_dim": 4, "top_k": 4, "sharpness": 1.0,
                                              "noise": 0.05, "seed": 0}),
        "feature_map": lambda: ((a(3, 2),), {}),
        "linear_attention_weights": lambda: ((a(4, 2), a(4, 2)), {}),
        "linear_attention_quadratic": lambda: ((a(4, 2), a(4, 2), a(4, 3)), {}),
        "linear_attention_recurrent": lambda: ((a(4, 2), a(4, 2), a(4, 3)), {}),
        "linear_attention_step": lambda: ((a(2, 3), np.ones(2), a(2), a(2), a(3)), {}),
        "ssm_recurrent": lambda: (([1.0, 0.0, 2.0], 0.5, 1.0, 1.0), {}),
        "ssm_kernel": lambda: ((0.5, 1.0, 1.0, 4), {}),
        "ssm_convolution": lambda: (([1.0, 0.0, 2.0], 0.5, 1.0, 1.0), {}),
        "softplus": lambda: ((a(3),), {}),
        "discretize": lambda: ((np.array([0.5, 2.0]),), {"a": -1.0, "b": 1.0}),
        "selective_ssm": lambda: (([1.0, 0.0, 2.0], [0.5, 0.1, 1.0]), {"a": -1.0, "b": 1.0, "c": 1.0}),
        "parallel_scan": lambda: (([0.5, 0.5, 0.5], [1.0, 0.0, 2.0]), {}),
        "work_efficient_rounds": lambda: ((6,), {}),
        "zero_point_quantize": lambda: ((torch.randn(2, 1, 4, 8), 4, 2), {}),
        "design_key": lambda: (("window 8 + 2 sinks",), {}),
        "plan_round": lambda: (([(0, 1), (1, 2)], 3), {}),
        "scan_by_rounds": lambda: (([0.5, 0.5, 0.5], [1.0, 0.0, 2.0], [[(0, 1)], [(1, 2)]]), {}),
        "ssm_state_bytes": lambda: ((4, 2), {"bytes_per_value": 2}),
        "hybrid_cache_bytes": lambda: ((16,), {"layers": 4, "attention_layers": 1, "kv_heads": 2, "head_dim": 4, "channels": 4,
                                               "state_size": 2, "bytes_per_value": 2}),
        "mla_expanded_attention": lambda: ((a(2, 3, 4), a(2, 3, 2), a(5, 6), a(5, 2), a(2, 6, 4), a(2, 6, 3), a(2, 3, 7)), {"mask": None}),
        "mla_absorbed_attention": lambda: ((a(2, 3, 4), a(2, 3, 2), a(5, 6), a(5, 2), a(2, 6, 4), a(2, 6, 3), a(2, 3, 7)), {"mask": None}),
        "rotation": lambda: ((0.3,), {}),
        "quantize": lambda: ((a(3, 4), 4), {"shared_axis": -1}),
        "dequantize": lambda: ((np.array([[1, -2]]), np.array([[0.5]])), {}),
        "quantized_kv_bytes_per_token": lambda: ((2, 2, 4, 4), {"scale_bits": 16}),
        "quantized_attention_error": lambda: ((4, -1), {"outlier_channels": 2, "outlier_scale": 10.0, "n": 8, "d": 8, "seed": 0}),
        "cache_bytes_by_design": lambda: ((16,), {}),
        "layered_cache_bytes": lambda: ((16, 2.5, 8), {"bytes_per_value": 2}),
    },
}

# Public names with no bad-input test here, and why.
NOT_FUZZED = {
    "module3": {"AttentionResult": "a record of tensors", "ParameterFloor": "a record of counts",
        "first_crossing": "calls the function it is given; fuzzed by tests/fuzz.py",
        # New with the copy task and the dL/dq measurement; tests/fuzz.py finds and fuzzes them (issue 12 adds their guards).
        "copy_task_batch": "fuzzed by tests/fuzz.py", "copy_loss_and_accuracy": "fuzzed by tests/fuzz.py",
        "train_copy_model": "trains on the notebook's recipe; its one argument is a switch",
        "query_gradient_experiment": "fuzzed by tests/fuzz.py",
        # They read the notebook's Llama 3.1 8B widths (cell variables this definitions-only namespace lacks);
        # tests/fuzz.py fuzzes them in the run notebook.
        "grouped_projection_flops": "reads cell variables; fuzzed by tests/fuzz.py", "ffn_flops": "reads cell variables; fuzzed by tests/fuzz.py",
        "judge_prediction": "prints a verdict on a student's prediction; fuzzed by tests/fuzz.py",
        # The capstone's exercises (issue 35): their guards are builder/contracts/capstone.py's, fuzzed in the run notebook
        # by tests/fuzz.py and in 5.1 and 5.2, which inline them.
        **dict.fromkeys(("CapstoneAttention", "CapstoneBlock", "CapstoneLM", "KVCache", "LayerKV", "RMSNorm", "SwiGLU", "apply_rope",
                         "attention_by_layer", "fit_induction", "generate", "induction_accuracy", "induction_batch", "train_step"),
                        "the capstone's guards; fuzzed by tests/fuzz.py")},
    "module5_1": {"peak_traced_bytes": "calls the function it is given", "best_seconds": "calls the function it is given",
                  "time_attention_backends": "times fixed inputs of its own", "check_stated": "raises on purpose when two numbers differ",
                  "fa2_forward_bytes": "fuzzed by tests/fuzz.py", "lazy_online_softmax": "fuzzed by tests/fuzz.py",
                  # Section 9 runs the capstone model trained in the notebook, which this definitions-only namespace lacks.
                  **dict.fromkeys(("PagedKVCache", "paged_forward", "paged_generate", "pool_kv_heads", "induction_loss"),
                                  "needs the model the notebook trains; fuzzed by tests/fuzz.py")},
    "module5_2": {"check_stated": "raises on purpose when two numbers differ",
                  # New with the KIVI-axes and selective-step exercises and the DESIGNS table; tests/fuzz.py fuzzes them.
                  **dict.fromkeys(("kivi_cache", "selective_step", "require_product_in_range", "design_numbers", "gated_delta_step"),
                                  "fuzzed by tests/fuzz.py"),
                  "sliding_window_with_sinks": "a FlexAttention-style mask_mod of index arrays",
                  # Section 16 (issue 37): memories and a decode loop over a trained capstone; tests/test_module5_2.py drives them.
                  **dict.fromkeys(("FullMemory", "WindowMemory", "KiviMemory", "LatentMemory", "decode_with", "measure_design", "capstone_designs"),
                                  "runs a trained capstone model; tests/test_module5_2.py checks it on one"),
                  "report_progress": "prints a training line; it has no input to refuse"},
}
FUZZED = [(module, name) for module, calls in VALID_CALLS.items() for name in calls]


def public_names(module):
    """Functions and classes a notebook defines itself, minus plots and the inlined course helpers."""
    from builder import regions

    # The names this notebook inlines (a name shared with another notebook, as 5.1's make_mask is with 5.2, is public where it is taught).
    nb = notebook(module)
    inlined = {r.arg for r in regions.parse(NOTEBOOK_SOURCES[module].read_text(encoding="utf-8")) if r.kind == "inline"}
    return {
        name for name, value in nb.items()
        if callable(value) and getattr(value, "__module__", None) == nb["__name__"]
        and not name.startswith(("_", "plot_")) and name not in inlined
    }


@pytest.mark.parametrize("module", list(NOTEBOOK_SOURCES))
def test_every_public_function_has_a_bad_input_test(module):
    listed = {name.split(".")[0] for name in VALID_CALLS[module]} | set(NOT_FUZZED[module])
    assert public_names(module) == listed, "a new public function needs a valid call in VALID_CALLS (or a reason in NOT_FUZZED)"


@pytest.mark.parametrize(("module", "name"), FUZZED, ids=[f"{m}-{n}" for m, n in FUZZED])
@BAD_INPUT
@given(data=st.data())
def test_random_bad_inputs_raise_only_type_or_value_errors(module, name, data):
    args, kwargs = VALID_CALLS[module][name]()
    if args and callable(args[0]):  # a wrapper that builds the class and calls it
        function, args = args[0], list(args[1:])
    else:
        function, args = notebook(module)[name], list(args)
    slots = [i for i in range(len(args))] + list(kwargs)
    for slot in data.draw(st.lists(st.sampled_from(slots), min_size=1, max_size=2, unique=True), label="replaced"):
        junk = data.draw(near(args[slot] if isinstance(slot, int) else kwargs[slot]), label=f"argument {slot}")
        if isinstance(slot, int):
            args[slot] = junk
        else:
            kwargs[slot] = junk
    nan_free_inputs = not has_nan((args, kwargs))
    try:
        with np.errstate(all="ignore"):
            result = function(*args, **kwargs)
    except (TypeError, ValueError):
        return
    except Exception as exc:
        pytest.fail(f"{name} raised {type(exc).__name__} (expected TypeError or ValueError): {exc}")
    if nan_free_inputs:
        assert not has_nan(result), f"{name} returned NaN for inputs without NaN, where it should have raised"
