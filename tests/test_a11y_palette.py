"""The course palette for colour-blind readers: contrast against the page, and colours that stay apart.

Colour vision deficiency is simulated with Machado, Oliveira and Fernandes (2009), "A
Physiologically-based Model for Simulation of Color Vision Deficiency", IEEE TVCG 15(6), at
severity 1.0 (dichromacy), applied to linear sRGB. Differences are CIE76 ΔE in CIELAB (D65):
about 2.3 is just noticeable; issue 28 measured 2.2 between the old blue and purple under
deuteranopia. The palette's line colours (``Palette.LINES``, the default cycle) must stay at
least ``MIN_DELTA_E`` apart under each simulation, and reach 3:1 against white (WCAG 2.2 SC 1.4.11).
"""

import itertools

import numpy as np
import pytest

from builder.contracts.style import Palette, apply_plot_style
from builder.contracts.diagrams import srgb_to_linear
from builder.handout.colour import AA_GRAPHICS, AA_TEXT, contrast

MACHADO = {
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
    "typical": np.eye(3).tolist(),
}
MIN_DELTA_E = 10.0  # well clear of "the same colour" (2.3), with room for a screen's error
SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
WHITE_XYZ = np.array([0.95047, 1.0, 1.08883])


def lab(colour: str, vision: str) -> np.ndarray:
    """CIELAB of ``colour`` as seen with ``vision`` (Machado's matrix on linear sRGB, clipped to the gamut)."""
    seen = np.clip(np.array(MACHADO[vision]) @ np.array(srgb_to_linear(colour)), 0, 1)
    t = SRGB_TO_XYZ @ seen / WHITE_XYZ
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str, vision: str) -> float:
    return float(np.linalg.norm(lab(a, vision) - lab(b, vision)))


def test_simulation_reproduces_the_issue():
    """The model tells apart what the issue measured: the old blue and purple merge under deuteranopia."""
    assert delta_e("#5E81AC", "#8F6BA8", "deuteranopia") < 3
    assert delta_e("#5E81AC", "#8F6BA8", "typical") > 10
    assert delta_e("#FF0000", "#00FF00", "typical") > 80


@pytest.mark.parametrize("vision", sorted(MACHADO))
def test_line_colours_stay_apart(vision):
    close = [(a, b, round(delta_e(a, b, vision), 1)) for a, b in itertools.combinations(Palette.LINES, 2)
             if delta_e(a, b, vision) < MIN_DELTA_E]
    assert close == [], f"{vision}: line colours closer than ΔE {MIN_DELTA_E}: {close}"


@pytest.mark.parametrize("name", ["BLUE", "ORANGE", "GREEN", "RED", "PURPLE", "GREY", "MUTED", "INK"])
def test_line_and_text_colours_reach_3_to_1_on_white(name):
    assert contrast(getattr(Palette, name), "#FFFFFF") >= AA_GRAPHICS, (name, round(contrast(getattr(Palette, name), "#FFFFFF"), 2))


def test_text_colours_reach_4_5_to_1_on_white_and_paper():
    for name in ("INK", "MUTED"):
        for background in ("#FFFFFF", Palette.PAPER):
            assert contrast(getattr(Palette, name), background) >= AA_TEXT, (name, background)


def test_white_text_on_solid_boxes_is_readable():
    """diagram_box(..., solid=True) writes white text on a line colour: WCAG's 3:1 for large text at least."""
    for colour in Palette.LINES:
        assert contrast("#FFFFFF", colour) >= AA_GRAPHICS, colour


def test_default_cycle_gives_colour_only():
    """The cycle sets colour alone: a marker or dash is the plot's own choice, and no cycled markevery skips data."""
    import matplotlib

    apply_plot_style()
    cycle = list(matplotlib.rcParams["axes.prop_cycle"])
    assert [c["color"] for c in cycle] == list(Palette.LINES)
    assert all(set(c) == {"color"} for c in cycle), cycle
    assert matplotlib.rcParams["savefig.dpi"] == Palette.DPI * Palette.PIXEL_DENSITY
    assert min(matplotlib.rcParams["legend.fontsize"], matplotlib.rcParams["xtick.labelsize"]) >= 9


def test_contrast_matches_wcag_examples():
    assert contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert contrast("#777777", "#FFFFFF") == pytest.approx(4.48, abs=0.01)
    assert contrast("#5E81AC", "#ECEFF4") == pytest.approx(3.49, abs=0.01)  # the old accent axe flagged


# ---- every line the notebooks actually draw (issue 37: a line in Palette.YELLOW, 1.56:1, passed the name list above) ----

_LINE_PROBE = r"""
import json, runpy, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.colors, matplotlib.pyplot as plt
seen, close = [], plt.close

def recording_close(fig=None):
    figures = [fig] if isinstance(fig, matplotlib.figure.Figure) else []
    for figure in figures:
        for index, ax in enumerate(figure.axes):
            title = ax.get_title() or (figure.texts[0].get_text() if figure.texts else "")
            for line in ax.get_lines():
                if line.get_linestyle() in ("None", "") and line.get_marker() in ("None", "none", "", None):
                    continue
                dashes = "none" if line.get_linestyle() in ("None", "") else repr(line._unscaled_dash_pattern)
                seen.append({"figure": id(figure), "axes": index, "title": title, "label": str(line.get_label()),
                             "colour": matplotlib.colors.to_hex(line.get_color()), "points": len(line.get_xdata()),
                             "marker": str(line.get_marker()), "dashes": dashes, "markevery": repr(line.get_markevery())})
    return close(fig)

plt.close = recording_close
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
print("LINES=" + json.dumps(seen))
"""

_NOTEBOOKS = ("module3", "module5_1", "module5_2")
_NO_MARKER = ("None", "none", "", " ")


@pytest.fixture(scope="module", params=_NOTEBOOKS)
def drawn_lines(request):
    """Every Line2D that one notebook's figures draw, read from the figures as the notebook closes them (one run each)."""
    import json
    import subprocess
    import sys

    from tests.support import NOTEBOOK_SOURCES

    run = subprocess.run([sys.executable, "-c", _LINE_PROBE, str(NOTEBOOK_SOURCES[request.param])], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    line = next(text for text in run.stdout.splitlines() if text.startswith("LINES="))
    return json.loads(line.removeprefix("LINES="))


def test_every_drawn_line_reaches_3_to_1_on_white(drawn_lines):
    faint = sorted({(d["colour"], d["label"]) for d in drawn_lines if contrast(d["colour"], "#FFFFFF") < AA_GRAPHICS})
    assert drawn_lines and faint == [], f"lines below 3:1 on white: {faint}"


def test_every_marked_line_marks_every_data_point(drawn_lines):
    """A line with markers draws one at each of its points: a fractional markevery skips data."""
    skipped = [(d["title"], d["label"], d["markevery"]) for d in drawn_lines
               if d["marker"] not in _NO_MARKER and d["markevery"] not in ("None", "1") and d["points"] > 1]
    assert skipped == [], f"marked lines that skip points: {skipped}"


def test_labelled_lines_differ_by_more_than_colour(drawn_lines):
    """On axes with a legend of two or more lines, no two lines share a marker and a dash: colour is never the only cue."""
    import collections

    labelled = collections.defaultdict(list)
    for d in drawn_lines:
        if d["label"] and not d["label"].startswith("_"):
            labelled[d["figure"], d["axes"]].append(d)
    alike = []
    for lines in labelled.values():
        cues = collections.defaultdict(list)
        for d in lines:
            cues["none" if d["marker"] in _NO_MARKER else d["marker"], d["dashes"]].append(d["label"])
        alike += [(lines[0]["title"], cue, labels) for cue, labels in cues.items() if len(lines) > 1 and len(labels) > 1]
    assert alike == [], f"lines told apart by colour alone (title, (marker, dashes), labels): {alike}"
