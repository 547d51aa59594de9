"""Figures that fit in every language: no text of any figure of any edition overlaps another or leaves the figure.

Each edition's source runs as a script under ``tests/figure_fit.py``, which draws every figure the
notebook shows and measures every text's box with the renderer that drew it. The figures the
Russian review found broken are listed in ``KNOWN`` (their sources are the notebook engineers' to
change): the test fails on any other problem, and on a known one that no longer occurs, so the list
only shrinks. The student editions draw the same figures from the reference solutions.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT

EDITIONS = [f"notebooks/{folder}{name}.py" for name in ("module3_basic_transformer", "module5_1_exact_attention", "module5_2_long_context")
            for folder in ("", "ru/")]
# (edition, kind, the text's first 30 characters): the figures that must change in the notebook sources.
_KNOWN = {
    # "Multi-head attention: split, weigh per head, merge, mix": the title runs into the panels' labels
    *{(edition, "overlap", text) for edition, texts in (
        ("notebooks/module3_basic_transformer.py", ("Q, K, V (T, H·d) = (4, 4)", "per head (H, T, d) = (2, 4, 2)",
                                                    "weights (H, T, T) = (2, 4, 4)", "outputs (H, T, d) = (2, 4, 2)")),
        ("notebooks/ru/module3_basic_transformer.py", ("Q, K, V (T, H·d) = (4, 4)", "по головам (H, T, d) = (2, 4, 2)",
                                                       "веса (H, T, T) = (2, 4, 4)", "выходы (H, T, d) = (2, 4, 2)",
                                                       "склеено (T, H·d) = (4, 4)"))) for text in texts},
    # "one sentence, two switches": two panel titles collide in Russian
    ("notebooks/ru/module3_basic_transformer.py", "overlap", "каузальная маска, T = 0,5"),
    # the GQA figure clips «запросы»
    ("notebooks/ru/module5_1_exact_attention.py", "leaves the figure", "запросы"),
    # the closing figure's title is clipped
    ("notebooks/ru/module5_2_long_context.py", "leaves the figure", "Современные модели (штриховка:"),
}
KNOWN = {(edition, kind, text[:30]) for edition, kind, text in _KNOWN}


def measured(edition: str) -> list[dict]:
    """The problems ``tests/figure_fit.py`` finds in one edition's figures (and the count of figures, last)."""
    run = subprocess.run([sys.executable, "-m", "tests.figure_fit", edition], cwd=ROOT, capture_output=True, text=True, timeout=900,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert run.returncode == 0, run.stderr[-2000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow  # runs all six editions (about 30 s)
def test_no_text_of_any_figure_overlaps_or_leaves_the_figure_beyond_the_known_ones():
    found, figures = set(), 0
    for edition in EDITIONS:
        lines = measured(edition)
        figures += lines[-1]["figures"]
        found |= {(edition, p["kind"], p["text"][:30]) for p in lines[:-1]}
    assert figures >= 40, f"only {figures} figures were drawn"
    assert not found - KNOWN, "texts that overlap or leave their figure:\n" + "\n".join(map(str, sorted(found - KNOWN)))
    assert not KNOWN - found, "fixed, now remove from KNOWN:\n" + "\n".join(map(str, sorted(KNOWN - found)))


def test_the_measure_finds_an_overlap_and_a_clipped_title():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from tests.figure_fit import problems

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("a title far too long to fit in a figure this narrow, clipped at both sides")
    ax.text(0.5, 0.5, "here", transform=ax.transAxes)
    ax.text(0.52, 0.5, "there", transform=ax.transAxes)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    kinds = {(p["kind"], p["text"][:5]) for p in problems(fig, canvas.get_renderer())}
    plt.close(fig)
    assert ("leaves the figure", "a tit") in kinds and ("overlap", "here") in kinds
