"""Module 5.2's own functions, loaded without running the notebook: exercise layout, bad inputs, references.

The named bugs live in tests/test_bug_catalog.py and the property-based tests in tests/test_properties.py.
Bad inputs must raise TypeError or ValueError naming the argument.
"""

import json
import math
import re

import numpy as np
import pytest

from tools.notebook_code import definitions
from tests.support import NOTEBOOK_SOURCES, ROOT, notebook

SOURCE = NOTEBOOK_SOURCES["module5_2"]
REFERENCE = json.loads((ROOT / "references" / "module5_2.json").read_text())


@pytest.fixture(scope="module")
def nb():
    """The notebook's imports, functions, classes and constants, without running a cell."""
    return notebook("module5_2")


EXERCISES = [
    ("rolling_buffer_step", "check_rolling_buffer_contract"),
    ("linear_attention_step", "check_linear_attention_contract"),
    ("parallel_scan", "check_parallel_scan_contract"),
    ("mla_absorbed_attention", "check_latent_absorption_contract"),
    ("kivi_cache", "check_kivi_axes_contract"),
    ("work_efficient_rounds", "check_work_efficient_scan_contract"),
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
    ("rolling_window_decode", (np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), 0), {}, ValueError, "window"),
    ("linear_attention_recurrent", (np.ones((3, 2)), np.ones((2, 2)), np.ones((3, 2))), {}, ValueError, "same n"),
    ("rolling_buffer_step", (np.ones((3, 2)), np.ones((3, 2)), -1, np.ones(2), np.ones(2), np.ones(2)), {}, ValueError, "t must be at least 0"),
    ("rolling_buffer_step", (np.ones((3, 2)), np.ones((2, 2)), 0, np.ones(2), np.ones(2), np.ones(2)), {}, ValueError, "values [w, d_v]"),
    ("linear_attention_step", (np.ones((3, 2)), np.ones(2), np.ones(2), np.ones(2), np.ones(2)), {}, ValueError, "S [d_k, d_v]"),
    ("parallel_scan", ([0.5, 0.5], [1.0]), {}, ValueError, "one entry per step"),
    ("parallel_scan", ([[0.5]], [[1.0]]), {}, ValueError, "dimensions"),
    ("quantize", ([1.0, 2.0], 1), {"shared_axis": -1}, ValueError, "bits"),
    ("discretize", (0.0,), {}, ValueError, "positive"),
    ("receptive_field", (8, 3, -1), {}, ValueError, "layers"),
    ("hybrid_cache_bytes", (1024,), {"attention_layers": 40}, ValueError, "attention_layers"),
    ("shortlist_experiment", (), {"top_k": 5000}, ValueError, "top_k"),
    ("kivi_cache", (np.ones((3, 2)), np.ones((2, 2)), 4), {}, ValueError, "same tokens"),
    ("kivi_cache", (np.ones((3, 2)), np.ones((3, 2)), 1), {}, ValueError, "bits"),
    ("selective_step", (0.0, 1.0, 0.5, 0.0, 1.0, 1.0), {}, ValueError, "negative"),
    ("selective_step", (0.0, 1.0, 0.0, -1.0, 1.0, 1.0), {}, ValueError, "delta"),
    ("work_efficient_rounds", (0,), {}, ValueError, "T must be at least 1"),
    ("scan_by_rounds", ([0.5, 0.5], [1.0]), {"rounds": []}, ValueError, "one entry per step"),
    ("design_numbers", ([("ring", 1, {})],), {}, ValueError, "unknown part kind"),
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
    assert list(nb["cache_bytes_by_design"](2**20).values()) == REFERENCE["designs_at_1m_bytes"]
    assert nb["hybrid_cache_bytes"](131_072) == REFERENCE["hybrid"]["hybrid_4_of_32_bytes_128k"]
    assert nb["mla_bytes_per_token"](61, 512, 64) == REFERENCE["mla"]["bytes_per_token"]
    states, rounds = nb["parallel_scan"](np.full(1024, 0.5), np.ones(1024))
    assert rounds == REFERENCE["ssm"]["scan_rounds_1024"]


def test_source_loads_without_running_cells():
    nb = definitions(SOURCE, ("rolling_window_decode", "parallel_scan"))
    assert set(nb) == {"rolling_window_decode", "parallel_scan"}


# ---- issue 37: section 16's memories, on an untrained capstone (the trained one runs in the notebook) ----


@pytest.fixture(scope="module")
def capstone_row(nb):
    import torch

    torch.manual_seed(0)
    config = nb["CapstoneConfig"](vocab=16, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=64, max_len=64)  # the notebook's CAPSTONE
    model = nb["CapstoneLM"](config).eval()
    inputs, _, _ = nb["induction_batch"](4, torch.Generator().manual_seed(1), k_min=10, k_max=12)
    return model, inputs


def test_the_full_memory_decodes_exactly_what_the_model_computes_at_once(nb, capstone_row):
    import torch

    model, inputs = capstone_row
    logits, _ = nb["decode_with"](model, inputs, nb["FullMemory"])
    with torch.no_grad():
        torch.testing.assert_close(logits, model(inputs), atol=1e-5, rtol=1e-5)


def test_a_window_wider_than_the_row_and_a_full_rank_latent_are_the_full_cache(nb, capstone_row):
    import torch

    model, inputs = capstone_row
    full, _ = nb["decode_with"](model, inputs, nb["FullMemory"])
    wide, _ = nb["decode_with"](model, inputs, lambda attn: nb["WindowMemory"](attn, inputs.shape[1]))
    latent, _ = nb["decode_with"](model, inputs, lambda attn: nb["LatentMemory"](attn, 32))
    torch.testing.assert_close(wide, full, atol=0, rtol=0)
    torch.testing.assert_close(latent, full, atol=1e-4, rtol=1e-4)
    narrow, _ = nb["decode_with"](model, inputs, lambda attn: nb["WindowMemory"](attn, 8))
    assert not torch.allclose(narrow, full, atol=1e-3), "a window of 8 on a 23-token row must change the late logits"


def test_every_memory_holds_the_bytes_the_reference_formula_gives(nb, capstone_row):
    model, inputs = capstone_row
    for name, memory in nb["capstone_designs"]().items():
        _, stored = nb["decode_with"](model, inputs, memory)
        assert stored == REFERENCE["capstone"]["bytes_23_tokens"][nb["design_key"](name)], name


def test_kivi_rounds_to_2_to_the_bits_levels_with_a_zero_point(nb):
    import torch

    x = torch.linspace(-1.0, 3.0, 16).reshape(1, 1, 16, 1)
    for bits in (2, 4):
        levels = nb["zero_point_quantize"](x, bits, 2).unique()
        assert len(levels) == 2**bits and levels.min() == -1.0 and levels.max() == 3.0  # the zero point keeps both ends


def test_the_stated_4_to_5_hours_follows_from_the_stated_method():
    """Prose at 100 words a minute, 25 minutes an exercise, 30 for running and reading cells, 15 for the self-test."""
    text = SOURCE.read_text(encoding="utf-8")
    cells = re.split(r"^# %%", text, flags=re.MULTILINE)
    prose = "\n".join(cell for cell in cells if cell.startswith(" [markdown]"))
    words = len(re.findall(r"[A-Za-z][A-Za-z'-]*", re.sub(r"<!--.*?-->", "", prose, flags=re.DOTALL)))
    exercises = sum(cell.startswith(' tags=["exercise"]') for cell in cells)
    hours = (words / 100 + 25 * exercises + 30 + 15) / 60
    assert "**How long it takes: 4 to 5 hours.**" in text and f"each of the {exercises} exercises" in text
    assert 4 <= hours <= 5, f"the method gives {hours:.2f} hours ({words} words, {exercises} exercises): update the stated range"
