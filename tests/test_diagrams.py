"""The lesson's diagrams (builder/contracts/diagrams.py): every label fits, none overlaps, numbers come from the inputs."""

import itertools
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from builder.contracts import diagrams  # noqa: E402
from builder.contracts.style import LANGUAGES, apply_plot_style  # noqa: E402
from tests.support import NOTEBOOK_SOURCES  # noqa: E402


def window_allowed(n, window):
    """Boolean causal window mask, True where query i reads key j."""
    back = np.arange(n)[:, None] - np.arange(n)[None, :]
    return (back >= 0) & (back < window)


def fields(n, window, layers):
    """Receptive fields after 0 .. layers windowed layers."""
    step, heard, out = window_allowed(n, window).astype(int), np.eye(n, dtype=int), []
    for _ in range(layers + 1):
        out.append(heard.astype(bool))
        heard = np.minimum(step @ heard, 1)
    return out


def with_global(n, window):
    allowed = window_allowed(n, window)
    allowed[:, 0] = True
    return allowed & np.tri(n, dtype=bool)


TEA_LEVELS = [[(0.5, 1), (0.5, 0), (0.5, 0), (0.5, 2)], [(0.5, 1), (0.25, 0.5), (0.25, 0), (0.25, 2)],
              [(0.5, 1), (0.25, 0.5), (0.125, 0.25), (0.0625, 2.125)]]
STACKS = [("all attention", "17.18 GB at 128k tokens", ["attention"] * 32),
          ("hybrid", "2.15 GB at 128k tokens", ["attention" if layer % 8 == 4 else "ssm" for layer in range(32)]),
          ("gpt-oss-120b", "4.84 GB at 128k tokens", ["window", "attention"] * 18)]
CALLS = {
    "draw_taxonomy": lambda language: diagrams.draw_taxonomy(language),
    "draw_kv_trip": lambda language: diagrams.draw_kv_trip(131_072, 32, language),
    "draw_window_relay": lambda language: diagrams.draw_window_relay(window_allowed(8, 3), fields(8, 3, 3), language),
    "draw_rolling_buffer": lambda language: diagrams.draw_rolling_buffer(4, 10, language),
    "draw_global_tokens": lambda language: diagrams.draw_global_tokens(with_global(16, 4), (0,), language),
    "draw_mla_flow": lambda language: diagrams.draw_mla_flow(512, 64, 128, 32_768, language),
    "draw_scan_tree": lambda language: diagrams.draw_scan_tree(TEA_LEVELS, language),
    "draw_layer_stacks": lambda language: diagrams.draw_layer_stacks(STACKS, language),
}


def texts(fig):
    """Every visible, non-empty text of a figure with its box in pixels, after a draw."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in fig.findobj(matplotlib.text.Text)
            if t.get_visible() and t.get_text().strip()]


def test_every_diagram_is_called_here():
    drawers = {name for name in diagrams.__all__ if name.startswith("draw_")}
    assert drawers == set(CALLS)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_labels_fit_the_figure_and_never_overlap(name, language):
    apply_plot_style()
    fig = CALLS[name](language)
    try:
        found = texts(fig)
        width, height = fig.bbox.width, fig.bbox.height
        for text, box in found:
            assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, f"{text!r} is clipped: {box}"
        for (a, box_a), (b, box_b) in itertools.combinations(found, 2):
            overlap_x = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            overlap_y = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            assert overlap_x <= 1 or overlap_y <= 1, f"{a!r} overlaps {b!r}"
        if language == "ru":
            assert any(re.search("[а-яА-Я]", text) for text, _ in found), "the Russian figure has no Russian label"
    finally:
        plt.close(fig)


def shown(fig):
    """All the text of a figure, joined."""
    try:
        return " | ".join(text for text, _ in texts(fig))
    finally:
        plt.close(fig)


def test_numbers_come_from_the_inputs():
    relay = shown(diagrams.draw_window_relay(window_allowed(10, 4), fields(10, 4, 2), "en"))
    assert "w = 4: 34 scores, not 55" in relay and "1 + 2 + 3 + 4 × 7 = 34" in relay
    assert "token 9 hears token 3, 6 back" in relay
    rolling = shown(diagrams.draw_rolling_buffer(3, 7, "en"))
    assert "slot = 7 mod 3 = 1" in rolling and "overwrite token 4" in rolling and "5, 6, 7" in rolling
    assert "34 KiB per token" in shown(diagrams.draw_kv_trip(34 * 1024, 12, "en"))
    mla = shown(diagrams.draw_mla_flow(256, 32, 16, 4_096, "en"))
    assert "288 numbers" in mla and "not 4,096" in mla and "16 heads" in mla
    assert "(0.0625, 2.125)" in shown(diagrams.draw_scan_tree(TEA_LEVELS, "en"))
    assert "15 pairs, not 21" in shown(diagrams.draw_global_tokens(with_global(6, 2), (0,), "en"))


def test_module5_shows_each_diagram_with_a_caption():
    source = "".join(path.read_text() for key, path in NOTEBOOK_SOURCES.items() if key.startswith("module5"))
    for name in CALLS:
        assert re.search(rf"show_figure\(\s*{name}\(", source), f"neither part of Module 5 shows {name}"
