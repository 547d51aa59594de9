"""Module 5.1's own functions, loaded without running the notebook: exercise layout, bad inputs, references and the benchmark.

The named bugs live in tests/test_bug_catalog.py and the property-based tests in tests/test_properties.py.
Bad inputs must raise TypeError or ValueError naming the argument.
"""

import json
import math
import re

import numpy as np
import pytest

from tools import bench
from tools.notebook_code import definitions
from tests.support import NOTEBOOK_SOURCES, ROOT, notebook

SOURCE = NOTEBOOK_SOURCES["module5_1"]
REFERENCE = json.loads((ROOT / "references" / "module5_1.json").read_text())


@pytest.fixture(scope="module")
def nb():
    """The notebook's imports, functions, classes and constants, without running a cell."""
    return notebook("module5_1")


EXERCISES = [
    ("make_mask", "check_additive_mask_contract"),
    ("sdpa", "check_sink_attention_contract"),
    ("repeat_kv_heads", "check_kv_repeat_contract"),
    ("kv_cache_bytes", "check_kv_cache_contract"),
    ("online_softmax_dot", "check_online_softmax_contract"),
    ("tiled_attention_plain", "check_plain_tiled_contract"),
    ("causal_tiled_attention", "check_causal_tiled_contract"),
    ("tiled_attention", "check_tiled_attention_contract"),
    ("tiled_attention_backward", "check_tiled_backward_contract"),
    ("reserve_slots", "check_paged_cache_contract"),
]


def test_every_exercise_cell_is_followed_by_its_contract_cell():
    cells = re.split(r"^# %%", SOURCE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    exercises = [i for i, cell in enumerate(cells) if cell.startswith(' tags=["exercise"]')]
    assert len(exercises) == len(EXERCISES)
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
    ("context_cost", (0,), {}, ValueError, "n"),
    ("mla_bytes_per_token", (61, 512, 0), {}, ValueError, "rope_dim"),
    ("additive_mask", (np.zeros((2, 2)),), {}, TypeError, "boolean"),
]


@pytest.mark.parametrize(("function", "args", "kwargs", "error", "named"), BAD_INPUTS, ids=[f"{b[0]}:{b[4]}" for b in BAD_INPUTS])
def test_bad_input_raises_an_error_that_names_it(nb, function, args, kwargs, error, named):
    with pytest.raises(error) as caught:
        nb[function](*args, **kwargs)
    assert named in str(caught.value)


# ---- the notebook's functions reproduce the independently generated references ----


def test_functions_reproduce_reference_values(nb):
    windows = [128 if layer % 2 == 0 else None for layer in range(36)]
    assert nb["kv_cache_bytes"](131_072, windows, 8, 64) == REFERENCE["gpt_oss_hybrid"]["hybrid_total_bytes"]
    assert nb["mla_bytes_per_token"](61, 512, 64) == REFERENCE["mla"]["bytes_per_token"]
    assert [nb["context_cost"](n)["cache_bytes"] for n in REFERENCE["two_bills"]["contexts"]] == REFERENCE["two_bills"]["cache_bytes"]
    output, trace = nb["online_softmax_dot"]([[2.0, 1.0], [3.0, 0.5]], [[1.0, 2.0], [3.0, 4.0]])
    assert math.isclose(output, REFERENCE["online_softmax_trace"]["output"], rel_tol=1e-12)
    assert math.isclose(trace[1]["alpha"], REFERENCE["online_softmax_trace"]["alpha"], rel_tol=1e-12)


# ---- Module 5.2 reuses some of these functions: builder/contracts/exact_attention.py is their one source ----


def test_lesson_cells_are_the_shared_source_letter_for_letter():
    """5.1 teaches (and grades) these functions in visible cells, so it cannot inline them: its text must be the contract's.

    5.2 inlines them and the build keeps those regions fresh; this holds 5.1's lesson and exercise cells to the
    same text, ignoring only the solution markers and the contract's in-body imports (the notebook imports once).
    """
    import ast
    import inspect
    import textwrap

    from builder.contracts import exact_attention

    def normal(source):
        dropped = ("### BEGIN SOLUTION", "### END SOLUTION", "import numpy as np", "import math", "import matplotlib.pyplot as plt")
        return "\n".join(line for line in source.splitlines() if line.strip() and line.strip() not in dropped)

    text = SOURCE.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    defined = {node.name: "".join(lines[node.lineno - 1:node.end_lineno])
               for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)}
    taught = [name for name in exact_attention.__all__ if name in defined]
    assert {"make_mask", "sdpa", "kv_cache_bytes", "kv_bytes_per_token"} <= set(taught), taught
    for name in taught:
        shared = textwrap.dedent(inspect.getsource(getattr(exact_attention, name)))
        assert normal(defined[name]) == normal(shared), (
            f"{name} in {SOURCE.name} differs from builder/contracts/exact_attention.py, which Module 5.2 inlines: "
            "make the same change there, then run python -m builder build")


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


# ---- the HBM counts: no line of the figure may fall below the floor, at any size ----


def test_hbm_counts_stay_above_the_floor(nb):
    count = nb["attention_hbm_accesses"]
    for n in (1, 7, 128, 4096, 100_000):
        for d, sram in ((1, 1), (64, 4096), (128, 116_736)):
            row = count(n, d, sram)
            assert min(row["standard"], row["flash"]) >= row["floor"], (n, d, sram, row)


def test_tiled_backward_equals_autograd_and_reads_the_saved_lse(nb):
    import torch

    rng = np.random.default_rng(3)
    Q, K, V, dO = (rng.standard_normal((13, 5)) for _ in range(4))
    O, _ = nb["causal_tiled_attention"](Q, K, V, tile_size=4)
    lse = nb["tiled_logsumexp"](Q, K, tile_size=4)
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).backward(torch.tensor(dO))
    for tile in (1, 4, 32):
        grads = nb["tiled_attention_backward"](Q, K, V, O, dO, lse, tile_size=tile)
        for got, want in zip(grads, (q.grad, k.grad, v.grad)):
            np.testing.assert_allclose(got, want.numpy(), atol=1e-12, rtol=0)
    halved = nb["tiled_attention_backward"](Q, K, V, O, dO, lse + np.log(2.0), tile_size=4)
    np.testing.assert_allclose(halved[2], v.grad.numpy() / 2, atol=1e-12, rtol=0)


def test_causal_tiles_never_read_the_unwritten_slots(nb):
    rng = np.random.default_rng(4)
    Q, K, V = (rng.standard_normal((10, 3)) for _ in range(3))
    garbage = np.full((6, 3), np.nan)
    for tile in (1, 3, 4, 16):
        out, tiles = nb["causal_tiled_attention"](Q, np.concatenate([K, garbage]), np.concatenate([V, garbage]), tile_size=tile)
        expected, _ = nb["causal_tiled_attention"](Q, K, V, tile_size=tile)
        np.testing.assert_array_equal(out, expected)
        blocks = -(-10 // tile)
        assert tiles == blocks * (blocks + 1) // 2
    with pytest.raises(ValueError, match="finite"):
        nb["causal_tiled_attention"](Q, np.concatenate([garbage[:1], K]), np.concatenate([V, garbage[:1]]), tile_size=4)


def test_figures_draw_the_markers_their_captions_promise(nb):
    """The sink figure's orange diamonds at logits 0, 2, 5 and the online-softmax line's every dot, its last included."""
    import matplotlib

    matplotlib.use("Agg")
    nb["apply_plot_style"]()  # the style's cycler spaces markers at a tenth of a line: a plot must say what it draws
    sink = nb["plot_sink_share"](128, (0.0, 2.0, 5.0))
    diamonds = [line for line in sink.axes[0].lines if line.get_marker() == "D"]
    assert [(list(line.get_xdata()), line.get_markevery()) for line in diamonds] == [([0.0], 1), ([2.0], 1), ([5.0], 1)]
    assert all(line.get_marker() in ("", "None", None) for line in sink.axes[0].lines if line not in diamonds)
    trace = [{"m": 1.0, "alpha": 1.0, "l": 1.0, "u": float(t)} for t in range(12)]
    online = nb["plot_online_softmax"](trace, 11.0)
    dots = next(line for line in online.axes[0].lines if line.get_marker() == "o")
    assert dots.get_markevery() == 1 and len(dots.get_xdata()) == 12
