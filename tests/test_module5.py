"""Module 5's own functions, loaded without running the notebook, against their contract checks.

Three kinds of test: every contract passes on the notebook's solution; realistic bugs, made by
editing one line of the notebook's own source, fail the contract with a message that names the
broken property; and property-based tests (hypothesis) compare the fast forms with their slow
definitions on random inputs. Bad inputs must raise TypeError or ValueError naming the argument.
"""

import inspect
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder import bench, contracts
from builder.contracts.violations import ContractViolation
from builder.notebook_code import definitions
from tests.support import ROOT

SOURCE = ROOT / "notebooks" / "module5_modern_attention.py"
REFERENCE = json.loads((ROOT / "references" / "module5.json").read_text())
FAST = settings(max_examples=30, deadline=None)


@pytest.fixture(scope="module")
def nb():
    """The notebook's imports, functions, classes and constants, without running a cell."""
    return definitions(SOURCE)


def contract(name):
    """A contract check from builder/contracts, by name."""
    return contracts.registry()[name][0]


def mutant(nb, name, old, new):
    """The notebook function ``name`` with one source fragment replaced: a realistic student bug."""
    source = inspect.getsource(nb[name])
    assert source.count(old) == 1, f"{old!r} must occur exactly once in {name}"
    namespace = dict(nb)
    exec(compile(source.replace(old, new), f"<mutant of {name}>", "exec"), namespace)
    return namespace[name]


EXERCISES = [
    ("make_mask", "check_additive_mask_contract"),
    ("sdpa", "check_sink_attention_contract"),
    ("repeat_kv_heads", "check_kv_repeat_contract"),
    ("kv_cache_bytes", "check_kv_cache_contract"),
    ("online_softmax_dot", "check_online_softmax_contract"),
    ("tiled_attention", "check_tiled_attention_contract"),
    ("rolling_window_decode", "check_rolling_buffer_contract"),
    ("linear_attention_recurrent", "check_linear_attention_contract"),
    ("parallel_scan", "check_parallel_scan_contract"),
    ("mla_absorbed_attention", "check_latent_absorption_contract"),
]


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(("function", "check"), EXERCISES, ids=[f for f, _ in EXERCISES])
def test_the_solution_passes_its_contract(nb, function, check):
    assert isinstance(contract(check)(nb[function]), dict)


def test_every_exercise_cell_is_followed_by_its_contract_cell():
    cells = re.split(r"^# %%", SOURCE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    exercises = [i for i, cell in enumerate(cells) if cell.startswith(' tags=["exercise"]')]
    assert len(exercises) >= 6
    for number, index in enumerate(exercises, start=1):
        body = cells[index].split("\n", 1)[1]
        assert body.startswith(f"# Exercise {number}: "), body[:60]
        assert "### BEGIN SOLUTION" in body and "### END SOLUTION" in body
        function = re.search(r"^def (\w+)\(", body, flags=re.MULTILINE).group(1)
        check = dict(EXERCISES)[function]
        assert cells[index + 1].strip() == f'check_exercise("Exercise {number}", {check}, {function}, globals())'


BUGS = [
    ("make_mask", "recent = query - key < window", "recent = query - key <= window",
     "check_additive_mask_contract", "window keeps exactly"),
    ("make_mask", "allowed = key <= query", "allowed = key < query",
     "check_additive_mask_contract", "reads its own key"),
    ("sdpa", "* dtype.type(1.0 / math.sqrt(Q.shape[-1]))", "* dtype.type(1.0 / Q.shape[-1])",
     "check_sink_attention_contract", "sqrt(d_k)"),
    ("sdpa", "denominator = denominator + np.exp(sink - top)", "exp_scores = exp_scores + np.exp(sink - top)",
     "check_sink_attention_contract", "sink is an extra logit"),
    ("sdpa", "weights = np.divide(exp_scores, denominator, out=np.zeros_like(exp_scores), where=denominator > 0)",
     "weights = exp_scores / denominator", "check_sink_attention_contract", "empty_row='zero'"),
    ("repeat_kv_heads", "return np.repeat(x, group, axis=-3)", "return np.concatenate([x] * group, axis=-3)",
     "check_kv_repeat_contract", "repeat, not tile"),
    ("kv_cache_bytes", "else min(context, window)", "else window",
     "check_kv_cache_contract", "min(context, window)"),
    ("kv_cache_bytes", "return 2 * kept", "return kept",
     "check_kv_cache_contract", "key and a value"),
    ("online_softmax_dot", "l = alpha * l + float(weights.sum())", "l = l + float(weights.sum())",
     "check_online_softmax_contract", "running 'l'"),
    ("online_softmax_dot", "m, l, n = -math.inf, 0.0, 0.0", "m, l, n = 0.0, 0.0, 0.0",
     "check_online_softmax_contract", "alpha"),
    ("tiled_attention", "acc *= alpha[:, None]", "pass",
     "check_tiled_attention_contract", "any tile size"),
    ("tiled_attention", "first, last = query_start + q0, query_start + q1 - 1", "first, last = q0, q1 - 1",
     "check_tiled_attention_contract", "query_start places"),
    ("tiled_attention", "blocked |= key_pos <= query_pos - window", "blocked |= key_pos < query_pos - window",
     "check_tiled_attention_contract", "window=w keeps the last w keys"),
    ("tiled_attention", "safe = np.where(m_new == -np.inf, 0.0, m_new)", "safe = m_new",
     "check_tiled_attention_contract", "without NaN"),
    ("tiled_attention", "np.divide(acc, l[:, None], out=acc, where=filled[:, None])", "acc /= l[:, None]",
     "check_tiled_attention_contract", "empty_row='zero'"),
    ("rolling_window_decode", "held = min(t + 1, window)", "held = min(t + 1, window + 1)",
     "check_rolling_buffer_contract", "never holds more than"),
    ("linear_attention_recurrent", "outputs[i] = q @ S / (q @ z)", "outputs[i] = q @ S / q.sum()",
     "check_linear_attention_contract", "62 / 15"),
    ("parallel_scan", "a, b = a_prev * a, a * b_prev + b", "a = a_prev * a\n        b = a * b_prev + b",
     "check_parallel_scan_contract", "loop"),
    ("mla_absorbed_attention", "(q_latent @ latent.T + q_rope @ k_rope.T)", "(q_latent @ latent.T)",
     "check_latent_absorption_contract", "RoPE branch"),
    ("mla_absorbed_attention", "math.sqrt(q_nope.shape[-1] + q_rope.shape[-1])", "math.sqrt(q_nope.shape[-1])",
     "check_latent_absorption_contract", "sqrt(d_nope + d_rope)"),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the bugs divide 0 by 0 on purpose
@pytest.mark.parametrize(("function", "old", "new", "check", "named"), BUGS, ids=[f"{b[0]}:{b[4]}" for b in BUGS])
def test_a_realistic_bug_fails_its_contract_by_name(nb, function, old, new, check, named):
    with pytest.raises(ContractViolation) as caught:
        contract(check)(mutant(nb, function, old, new))
    message = str(caught.value)
    assert named in message, message
    for part in ("contract property", "on input:", "expected:", "actual:", "usual cause:"):
        assert part in message


def test_a_tiled_attention_that_builds_the_dense_matrix_fails_the_memory_property(nb):
    def dense_inside(Q, K, V, mask=None, **options):
        n_q, n_k = np.shape(Q)[0], np.shape(K)[0]
        start = options.get("query_start", 0)
        distance = (start + np.arange(n_q))[:, None] - np.arange(n_k)[None, :]
        allowed = distance >= 0 if options.get("causal") else np.ones((n_q, n_k), dtype=bool)
        if options.get("window") is not None:
            allowed &= distance < options["window"]
        full = np.where(allowed, 0.0, -np.inf) + (0.0 if mask is None else mask)
        return nb["sdpa"](Q, K, V, full, sink=options.get("sink"), empty_row=options.get("empty_row", "error"))

    with pytest.raises(ContractViolation, match="never holds a T_q x T_k score matrix"):
        contract("check_tiled_attention_contract")(dense_inside)


# ---- property-based tests: fast forms against their definitions ----


@FAST
@given(
    n_q=st.integers(1, 20), extra_keys=st.integers(0, 12), d=st.integers(1, 6), tile=st.integers(1, 9),
    causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 8)), sink=st.one_of(st.none(), st.floats(-3, 3)),
    seed=st.integers(0, 2**16),
)
def test_tiled_attention_equals_dense_attention(nb, n_q, extra_keys, d, tile, causal, window, sink, seed):
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


@FAST
@given(n=st.integers(1, 30), window=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_rolling_buffer_equals_windowed_attention(nb, n, window, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((n, 4)) for _ in range(3))
    outputs, largest = nb["rolling_window_decode"](Q, K, V, window)
    assert largest == min(n, window)
    np.testing.assert_allclose(outputs, nb["sdpa"](Q, K, V, nb["make_mask"](n, window)), atol=1e-12)


@FAST
@given(n=st.integers(1, 40), window=st.integers(1, 40), n_sink=st.integers(0, 5))
def test_mask_pair_count_matches_its_formula(nb, n, window, n_sink):
    n_sink = min(n_sink, n)
    allowed = np.isfinite(nb["make_mask"](n, window, n_sink))
    sinks_outside_window = sum(max(0, min(n_sink, i - window + 1)) for i in range(n))
    assert allowed.sum() == sum(min(i + 1, window) for i in range(n)) + sinks_outside_window
    assert not np.triu(allowed, 1).any()


@FAST
@given(a=st.lists(st.floats(-1.5, 1.5), min_size=1, max_size=70), seed=st.integers(0, 2**16))
def test_parallel_scan_equals_the_loop(nb, a, seed):
    b = np.random.default_rng(seed).standard_normal(len(a))
    h, loop = 0.0, []
    for a_t, b_t in zip(a, b):
        h = a_t * h + b_t
        loop.append(h)
    states, rounds = nb["parallel_scan"](a, b)
    np.testing.assert_allclose(states, loop, atol=1e-9, rtol=1e-9)
    assert rounds == (math.ceil(math.log2(len(a))) if len(a) > 1 else 0)


@FAST
@given(n=st.integers(1, 25), d_k=st.integers(1, 5), d_v=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_linear_attention_running_sum_equals_quadratic_form(nb, n, d_k, d_v, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)), rng.standard_normal((n, d_v))
    out, S, z = nb["linear_attention_recurrent"](Q, K, V)
    np.testing.assert_allclose(out, nb["linear_attention_quadratic"](Q, K, V), atol=1e-10)
    assert S.shape == (d_k, d_v) and z.shape == (d_k,)


@FAST
@given(logits=st.lists(st.floats(-50, 50), min_size=1, max_size=30), cuts=st.lists(st.integers(1, 29), max_size=6))
def test_online_softmax_equals_direct_softmax_for_any_tiling(nb, logits, cuts):
    values = np.linspace(-1.0, 1.0, len(logits))
    edges = sorted({c for c in cuts if c < len(logits)})
    tiles = np.split(np.array(logits), edges)
    out, trace = nb["online_softmax_dot"](tiles, np.split(values, edges))
    weights = np.exp(np.array(logits) - max(logits))
    assert len(trace) == len(tiles)
    assert math.isclose(out, weights @ values / weights.sum(), rel_tol=1e-9, abs_tol=1e-12)


@FAST
@given(context=st.integers(1, 10**7), windows=st.lists(st.one_of(st.none(), st.integers(1, 5000)), min_size=1, max_size=8))
def test_kv_cache_bytes_is_exact_and_grows_only_with_full_layers(nb, context, windows):
    size = nb["kv_cache_bytes"](context, windows, 8, 64)
    assert isinstance(size, int)
    assert size == 2 * 8 * 64 * 2 * sum(context if w is None else min(context, w) for w in windows)
    assert nb["kv_cache_bytes"](context + 5000, windows, 8, 64) - nb["kv_cache_bytes"](context + 4999, windows, 8, 64) == (
        2048 * windows.count(None)
    )


@FAST
@given(n_kv=st.integers(1, 4), group=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_gqa_equals_mha_with_copied_heads(nb, n_kv, group, seed):
    rng = np.random.default_rng(seed)
    H = n_kv * group
    Q, K, V = rng.standard_normal((H, 5, 3)), rng.standard_normal((n_kv, 5, 3)), rng.standard_normal((n_kv, 5, 2))
    copied_K = np.stack([K[h // group] for h in range(H)])
    copied_V = np.stack([V[h // group] for h in range(H)])
    mask = nb["make_mask"](5)
    np.testing.assert_allclose(nb["gqa_attention"](Q, K, V, mask), nb["sdpa"](Q, copied_K, copied_V, mask), atol=1e-12)


@FAST
@given(seed=st.integers(0, 2**16), t_q=st.integers(1, 5), extra=st.integers(0, 5))
def test_absorbed_latent_attention_equals_expanded(nb, seed, t_q, extra):
    rng = np.random.default_rng(seed)
    H, T_k, d_c, d_nope, d_rope, d_v, d_model = 3, t_q + extra, 4, 5, 2, 3, 6
    args = (rng.standard_normal((H, t_q, d_nope)), rng.standard_normal((H, t_q, d_rope)), rng.standard_normal((T_k, d_c)),
            rng.standard_normal((T_k, d_rope)), rng.standard_normal((H, d_c, d_nope)), rng.standard_normal((H, d_c, d_v)),
            rng.standard_normal((H, d_v, d_model)))
    allowed = np.arange(T_k)[None, :] <= (extra + np.arange(t_q))[:, None]
    mask = nb["additive_mask"](allowed)
    np.testing.assert_allclose(nb["mla_absorbed_attention"](*args, mask), nb["mla_expanded_attention"](*args, mask), atol=1e-10)


# ---- bad inputs ----

BAD_INPUTS = [
    ("make_mask", (0,), {}, ValueError, "n"),
    ("make_mask", (4,), {"window": 2.5}, TypeError, "window"),
    ("make_mask", (4,), {"n_sink": 1}, ValueError, "window"),
    ("sdpa", (np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 3))), {}, ValueError, "d_k"),
    ("sdpa", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"mask": np.ones((2, 2), dtype=bool)}, TypeError, "additive_mask"),
    ("sdpa", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"mask": np.full((2, 2), np.inf)}, ValueError, "+inf"),
    ("sdpa", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"empty_row": "skip"}, ValueError, "empty_row"),
    ("sdpa", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"sink": np.zeros(5)}, ValueError, "sink"),
    ("sdpa", (np.full((2, 3), np.nan), np.ones((2, 3)), np.ones((2, 3))), {}, ValueError, "finite"),
    ("sdpa", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"mask": np.full((2, 2), -np.inf)}, ValueError, "no allowed key"),
    ("repeat_kv_heads", (np.ones((3, 2, 2)), 4), {}, ValueError, "multiple"),
    ("repeat_kv_heads", (np.ones((2, 2)), 4), {}, ValueError, "dimensions"),
    ("kv_cache_bytes", (10, [None, -1], 8, 64), {}, ValueError, "layer_windows[1]"),
    ("kv_cache_bytes", (10, [None], 8, "64"), {}, TypeError, "head_dim"),
    ("online_softmax_dot", ([[1.0]], [[1.0], [2.0]]), {}, ValueError, "same"),
    ("online_softmax_dot", ([[1.0, np.inf]], [[1.0, 2.0]]), {}, ValueError, "finite"),
    ("tiled_attention", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"tile_size": 0}, ValueError, "tile_size"),
    ("tiled_attention", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"window": 2}, ValueError, "causal=True"),
    ("tiled_attention", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"query_start": 1}, ValueError, "causal=True"),
    ("tiled_attention", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"causal": True, "query_start": -1}, ValueError, "query_start"),
    ("tiled_attention", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"mask": np.zeros((2, 3))}, ValueError, "broadcast"),
    ("tiled_attention", (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))), {"sink": math.nan}, ValueError, "sink"),
    ("rolling_window_decode", (np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), 0), {}, ValueError, "window"),
    ("linear_attention_recurrent", (np.ones((3, 2)), np.ones((2, 2)), np.ones((3, 2))), {}, ValueError, "same n"),
    ("parallel_scan", ([0.5, 0.5], [1.0]), {}, ValueError, "one entry per step"),
    ("parallel_scan", ([[0.5]], [[1.0]]), {}, ValueError, "dimensions"),
    ("quantize", ([1.0, 2.0], 1), {"shared_axis": -1}, ValueError, "bits"),
    ("discretize", (0.0,), {}, ValueError, "positive"),
    ("receptive_field", (8, 3, -1), {}, ValueError, "layers"),
    ("hybrid_cache_bytes", (1024,), {"attention_layers": 40}, ValueError, "attention_layers"),
    ("shortlist_experiment", (), {"top_k": 5000}, ValueError, "top_k"),
    ("context_cost", (0,), {}, ValueError, "n"),
    ("mla_bytes_per_token", (61, 512, 0), {}, ValueError, "rope_dim"),
    ("additive_mask", (np.zeros((2, 2)),), {}, TypeError, "boolean"),
]


@pytest.mark.parametrize(("function", "args", "kwargs", "error", "named"), BAD_INPUTS, ids=[f"{b[0]}:{b[4]}" for b in BAD_INPUTS])
def test_bad_input_raises_an_error_that_names_it(nb, function, args, kwargs, error, named):
    with pytest.raises(error) as caught:
        nb[function](*args, **kwargs)
    assert named in str(caught.value)


def test_mla_shapes_are_checked(nb):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in ((2, 3, 4), (2, 3, 2), (5, 6), (5, 2), (2, 6, 4), (2, 6, 3), (2, 3, 7))]
    args[4] = args[4][:, :, :3]  # W_uk one column short
    with pytest.raises(ValueError, match="W_uk"):
        nb["mla_absorbed_attention"](*args)


# ---- the notebook's functions reproduce the independently generated references ----


def test_functions_reproduce_reference_values(nb):
    windows = [128 if layer % 2 == 0 else None for layer in range(36)]
    assert nb["kv_cache_bytes"](131_072, windows, 8, 64) == REFERENCE["gpt_oss_hybrid"]["hybrid_total_bytes"]
    assert nb["mla_bytes_per_token"](61, 512, 64) == REFERENCE["mla"]["bytes_per_token"]
    assert [nb["context_cost"](n)["cache_bytes"] for n in REFERENCE["two_bills"]["contexts"]] == REFERENCE["two_bills"]["cache_bytes"]
    assert list(nb["cache_bytes_by_design"](2**20).values()) == REFERENCE["designs_at_1m_bytes"]
    assert nb["hybrid_cache_bytes"](131_072) == REFERENCE["hybrid"]["hybrid_4_of_32_bytes_128k"]
    output, trace = nb["online_softmax_dot"]([[2.0, 1.0], [3.0, 0.5]], [[1.0, 2.0], [3.0, 4.0]])
    assert math.isclose(output, REFERENCE["online_softmax_trace"]["output"], rel_tol=1e-12)
    assert math.isclose(trace[1]["alpha"], REFERENCE["online_softmax_trace"]["alpha"], rel_tol=1e-12)
    states, rounds = nb["parallel_scan"](np.full(1024, 0.5), np.ones(1024))
    assert rounds == REFERENCE["ssm"]["scan_rounds_1024"]


# ---- the tiled-attention benchmark ----


def test_tiled_benchmark_measures_exact_ratios():
    rows = bench.tiled_ratios(lengths=(256, 512), repeats=1)
    assert [r["n"] for r in rows] == [256, 512]
    for r in rows:
        assert r["max_error"] < 1e-12 and r["memory_ratio"] < 1 and r["time_ratio"] > 0
    report, _ = bench.tiled_report(rows)
    assert "time ratio at n=512" in report and "memory ratio" not in report.splitlines()[-1]


def test_bench_is_a_cli_subcommand():
    from builder.cli import parse_args

    assert parse_args(["bench", "tiled"]).what == "tiled"
    with pytest.raises(SystemExit):
        parse_args(["bench", "everything"])


def test_source_loads_without_running_cells():
    nb = definitions(Path(SOURCE), ("tiled_attention", "sdpa", "make_mask"))
    assert set(nb) == {"tiled_attention", "sdpa", "make_mask"}
