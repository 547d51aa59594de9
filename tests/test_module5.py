"""Module 5's own functions, loaded without running the notebook: exercise layout, bad inputs, references, the benchmark.

The named bugs live in tests/test_bug_catalog.py and the property-based tests in tests/test_properties.py.
Bad inputs must raise TypeError or ValueError naming the argument.
"""

import json
import math
import re

import numpy as np
import pytest

from builder import bench
from builder.notebook_code import definitions
from tests.support import NOTEBOOK_SOURCES, ROOT, notebook

SOURCE = NOTEBOOK_SOURCES[5]
REFERENCE = json.loads((ROOT / "references" / "module5.json").read_text())


@pytest.fixture(scope="module")
def nb():
    """The notebook's imports, functions, classes and constants, without running a cell."""
    return notebook(5)


EXERCISES = [
    ("make_mask", "check_additive_mask_contract"),
    ("sdpa", "check_sink_attention_contract"),
    ("repeat_kv_heads", "check_kv_repeat_contract"),
    ("kv_cache_bytes", "check_kv_cache_contract"),
    ("online_softmax_dot", "check_online_softmax_contract"),
    ("tiled_attention_plain", "check_plain_tiled_contract"),
    ("causal_tiled_attention", "check_causal_tiled_contract"),
    ("tiled_attention", "check_tiled_attention_contract"),
    ("rolling_window_decode", "check_rolling_buffer_contract"),
    ("linear_attention_recurrent", "check_linear_attention_contract"),
    ("parallel_scan", "check_parallel_scan_contract"),
    ("mla_absorbed_attention", "check_latent_absorption_contract"),
]


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
    ("repeat_kv_heads", (np.ones((3, 2, 2)), 0), {}, ValueError, "group must be at least 1"),
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


def test_source_loads_without_running_cells():
    nb = definitions(SOURCE, ("tiled_attention", "sdpa", "make_mask"))
    assert set(nb) == {"tiled_attention", "sdpa", "make_mask"}
