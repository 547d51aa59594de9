"""The shared argument guards of issue 12: the allocation budget, tensors that require grad or live elsewhere, helper error types."""

import json

import numpy as np
import pytest
import torch

from builder.contracts.frozen import Reference, load_reference, verify_sha256
from builder.contracts.validation import (
    ALLOCATION_BUDGET_BYTES,
    require_array,
    require_budget,
    require_finite_result,
    require_tensor,
)


def test_budget_refuses_before_allocating_and_names_size_bytes_and_limit():
    side = 1 << 16  # a 65,536 x 65,536 float64 mask: 32 GiB
    with pytest.raises(ValueError) as caught:
        require_budget("the mask", (side, side))
    message = str(caught.value)
    assert "(65536, 65536)" in message and f"{side * side * 8:,} bytes" in message and f"{ALLOCATION_BUDGET_BYTES:,}" in message


def test_budget_boundary_is_the_budget_itself():
    assert require_budget("x", (ALLOCATION_BUDGET_BYTES // 8,)) == ALLOCATION_BUDGET_BYTES
    with pytest.raises(ValueError):
        require_budget("x", (ALLOCATION_BUDGET_BYTES // 8 + 1,))
    assert require_budget("x", (ALLOCATION_BUDGET_BYTES,), itemsize=1) == ALLOCATION_BUDGET_BYTES


def test_require_array_detaches_a_tensor_that_requires_grad():
    q = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    array = require_array("Q", q, ndim=2)
    assert isinstance(array, np.ndarray) and array.shape == (2, 3)


@pytest.mark.parametrize("make", [lambda: torch.ones(2, 3, device="meta"), lambda: torch.ones(2, 3).to_sparse()], ids=["meta device", "sparse layout"])
def test_tensor_guards_refuse_other_devices_and_layouts_with_a_type_error(make):
    with pytest.raises(TypeError, match="cpu"):
        require_tensor("x", make())
    with pytest.raises(TypeError, match="cpu"):
        require_array("x", make())


def test_finite_result_guard_raises_floating_point_error_naming_the_cause():
    assert require_finite_result("scan", np.ones(3), "unused") is not None
    with pytest.raises(FloatingPointError, match="products over 1e308"):
        require_finite_result("scan", np.array([1.0, np.inf]), "products over 1e308")
    with pytest.raises(FloatingPointError):
        require_finite_result("scan", torch.tensor([float("nan")]), "a NaN")


def test_helper_errors_are_type_or_value_errors():
    text = json.dumps({"a": {"b": 1}})
    with pytest.raises(TypeError, match="text must be a str"):
        verify_sha256(None, "0" * 64, "references/x.json")
    with pytest.raises(TypeError):
        load_reference(3, "0" * 64, "x")
    with pytest.raises(TypeError, match="dict"):
        Reference(None, "x")
    import hashlib

    reference = load_reference(text, hashlib.sha256(text.encode()).hexdigest(), "references/x.json")
    with pytest.raises(ValueError, match="keys are: a"):
        reference.value("nope")
    with pytest.raises(ValueError, match="keys are: b"):
        reference.check("a.c", 1)
    with pytest.raises(TypeError):
        reference.value(None)
    assert reference.value("a.b") == 1


def test_exercise_helpers_refuse_a_namespace_that_is_not_globals():
    from builder.contracts.exercises import check_exercise, exercise_summary, report_section, use_reference

    for call in (lambda: use_reference("Exercise 1", None, "r"), lambda: report_section("S", None),
                 lambda: exercise_summary([]), lambda: check_exercise(1, len, len, {})):
        with pytest.raises(TypeError):
            call()


def test_contract_close_refuses_a_meta_tensor_as_a_type_error_or_violation():
    from builder.contracts.violations import ContractViolation, contract_close

    with pytest.raises(TypeError, match="expected value"):
        contract_close("p", "x", torch.ones(2), torch.ones(2, device="meta"), "hint")
    with pytest.raises(ContractViolation):
        contract_close("p", "x", torch.ones(2, device="meta"), torch.ones(2), "hint")


def test_require_mask_takes_booleans_or_zero_one_and_refuses_other_numbers():
    from builder.contracts.validation import require_mask

    assert require_mask("m", [[True, False]]).dtype == bool
    assert require_mask("m", torch.tensor([[1, 0]])).tolist() == [[True, False]]
    with pytest.raises(ValueError, match="True/False"):
        require_mask("m", np.array([[0.5, 1.0]]))
    with pytest.raises(ValueError):
        require_mask("m", np.array([[np.nan, 1.0]]))


def test_diagrams_refuse_sizes_they_cannot_draw_instead_of_hanging_or_indexing_past_the_end():
    from builder.contracts import diagrams

    for call in (lambda: diagrams.draw_rolling_buffer(0, 5), lambda: diagrams.draw_rolling_buffer(3, 2**17),
                 lambda: diagrams.draw_window_relay(np.ones((0, 0), bool), []),
                 lambda: diagrams.draw_global_tokens(np.tril(np.ones((4, 4), bool)), (7,))):
        with pytest.raises(ValueError):
            call()


def test_log_scale_draws_plain_labels_without_minor_ticks_and_refuses_what_it_cannot_scale():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    from builder.contracts.style import log_scale, log_tick_label

    assert [log_tick_label(v) for v in (0.0, -1.0, 1e-12, 0.0005, 2.0, 50_000.0, 1e5)] == ["", "", "10⁻¹²", "0.0005", "2", "50000", "10⁵"]
    assert log_tick_label(2**17, base=2) == "2¹⁷" and log_tick_label(3e7) == "3e+07"
    fig, (wide, narrow) = plt.subplots(1, 2)
    try:
        wide.plot([1e2, 1e6], [1.0, 1e3])
        log_scale(wide, "both")
        narrow.plot([2.0, 5.0], [1.0, 2.0])
        log_scale(narrow, "x")
        fig.canvas.draw()
        assert wide.get_xscale() == wide.get_yscale() == "log"
        assert isinstance(wide.xaxis.get_minor_locator(), matplotlib.ticker.NullLocator)
        assert {"100", "10000", "10⁶"} <= {t.get_text() for t in wide.get_xticklabels()}
        # fewer than two powers in view: ticks at 1, 2 and 5 times them still label the axis
        shown = [t.get_text() for t in narrow.get_xticklabels() if 2.0 <= t.get_position()[0] <= 5.0]
        assert shown == ["2", "5"]
    finally:
        plt.close(fig)
    with pytest.raises(TypeError, match="Axes"):
        log_scale("not an axes")
    with pytest.raises(ValueError, match="which"):
        log_scale(wide, "z")
    with pytest.raises(ValueError, match="base"):
        log_scale(wide, "x", base=1)
    with pytest.raises(TypeError, match="real number"):
        log_tick_label("10")


def test_shown_text_pt_reads_only_the_text_that_is_drawn():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from builder.contracts.style import Palette, shown_text_pt

    fig, (shown, hidden) = plt.subplots(1, 2, figsize=(16, 3))  # 1,536 px drawn, shown at 800
    shown.plot([0, 1], [0, 1], label="a line")
    shown.legend(fontsize=9)
    shown.tick_params(labelsize=8)
    shown.text(0, 0, "invisible", fontsize=4, visible=False)
    shown.text(0, 1, "   ", fontsize=3)  # blank: nothing to read
    hidden.set_xticks([0, 1], ["never", "drawn"], fontsize=5)  # its axis is off, so its tick labels are not drawn
    hidden.axis("off")
    hidden.set_title("a title", fontsize=12)
    fig.canvas.draw()
    scale = Palette.SHOWN_WIDTH_PX / (16 * Palette.DPI)
    assert shown_text_pt(fig) == pytest.approx(8 * scale)
    shown.xaxis.set_visible(False)
    shown.yaxis.set_visible(False)
    assert shown_text_pt(fig) == pytest.approx(9 * scale)  # the legend is now the smallest drawn text
    plt.close(fig)
    with pytest.raises(TypeError, match="Figure"):
        shown_text_pt(shown)


def test_png_bytes_decodes_to_the_rendered_pixels_and_refuses_what_is_not_an_rgba_image():
    import io

    from PIL import Image

    from builder.contracts.style import png_bytes

    rgba = np.random.default_rng(0).integers(0, 256, size=(5, 7, 4), dtype=np.uint8)
    decoded = Image.open(io.BytesIO(png_bytes(rgba)))
    assert decoded.mode == "RGBA" and decoded.size == (7, 5)
    assert np.array_equal(np.asarray(decoded), rgba)
    for bad in (rgba.astype(float), rgba[..., :3], rgba[0], np.zeros((0, 3, 4), dtype=np.uint8)):
        with pytest.raises(ValueError, match="uint8 image"):
            png_bytes(bad)
