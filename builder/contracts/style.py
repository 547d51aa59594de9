"""One look for every figure in the course, English or Russian labels, and captioned display."""

from .validation import require_int, require_real

__all__ = ["LANGUAGES", "Palette", "apply_plot_style", "localized", "log_scale", "log_tick_label", "png_bytes", "shown_text_pt",
           "show_figure"]

LANGUAGES = ("en", "ru")


class Palette:
    """The course colours, one name per role, shared by every figure.

    The six line colours (``LINES``, the default cycle, colour only) are Okabe and Ito's colour-blind-safe set,
    vermillion for orange, a deep red added, purple and grey darkened: each reaches 3:1 against
    white (WCAG's minimum for graphics) and stays apart from the others under simulated
    deuteranopia, protanopia and tritanopia (tests/test_a11y_palette.py). YELLOW, BORDER and
    PAPER are light fills and rules, never lines or text.
    """

    BLUE = "#0072B2"
    ORANGE = "#D55E00"
    GREEN = "#009E73"
    RED = "#A51C30"
    PURPLE = "#C0649A"
    GREY = "#636B78"
    YELLOW = "#EBCB8B"
    INK = "#2E3440"
    MUTED = "#4C566A"
    BORDER = "#D8DEE9"
    PAPER = "#ECEFF4"
    LINES = (BLUE, ORANGE, GREEN, RED, PURPLE, GREY)
    # A second cue, for a plot of several series to pass as marker= and linestyle= (the cycle gives colour only):
    # the n-th series differs from the others in marker and dash too, with a marker on every data point.
    MARKERS = ("o", "s", "^", "D", "v", "P")
    DASHES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)))
    # How figures are shown: an inch of figure is 96 CSS pixels (a matplotlib point is a CSS point),
    # at most 800 px wide (what Colab and the handout show), in PNGs of twice the shown pixels.
    DPI = 96
    SHOWN_WIDTH_PX = 800
    PIXEL_DENSITY = 2


def apply_plot_style():
    """Set matplotlib defaults once: fonts, colour-blind-safe line colours (markers and dashes are each plot's), grid, 96 dpi."""
    import matplotlib

    matplotlib.rcParams.update({
        "font.family": "DejaVu Sans",
        "font.size": 11,
        "text.hinting": "no_hinting",  # at twice the pixels hinting changes nothing visible; skipping it draws text a fifth faster
        "text.color": Palette.INK,
        "axes.labelcolor": Palette.INK,
        "axes.titlecolor": Palette.INK,
        "axes.titlesize": 13,
        "axes.titleweight": "bold",
        "axes.titlelocation": "left",
        "axes.titley": 1.0,  # a fixed title height: automatic placement lays out every tick label once more per draw
        "axes.labelsize": 11,
        "axes.edgecolor": Palette.MUTED,
        "axes.linewidth": 0.8,
        "axes.grid": True,
        "axes.axisbelow": True,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": matplotlib.cycler(color=Palette.LINES),  # colour only: a plot of several series sets its own markers and dashes
        "lines.linewidth": 1.8,
        "lines.markersize": 5,
        "grid.color": Palette.BORDER,
        "grid.linewidth": 0.6,
        "xtick.color": Palette.MUTED,
        "ytick.color": Palette.MUTED,
        "xtick.labelsize": 10,
        "ytick.labelsize": 10,
        "legend.frameon": False,
        "legend.fontsize": 10,
        "figure.facecolor": "white",
        "figure.dpi": Palette.DPI,
        "savefig.dpi": Palette.DPI * Palette.PIXEL_DENSITY,
        "savefig.facecolor": "white",
        "svg.hashsalt": "course",
    })


def localized(language, en, ru):
    """Pick the English or the Russian text of a label."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    return en if language == "en" else ru


def log_tick_label(value, base=10):
    """A log-axis tick label: plain from 0.001 up to 100,000 (2, 0.5, 50000), a power in superscripts outside (10⁻¹², 2¹⁷)."""
    import math

    base, value = require_int("base", base, minimum=2), require_real("value", value)
    if value <= 0:
        return ""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    power = round(math.log(value, base))
    if not math.isclose(float(base) ** power, value, rel_tol=1e-9):
        return f"{value:.3g}"
    return f"{base}" + str(power).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def log_scale(ax, which="x", base=10):
    """Put the x, y or both axes of ``ax`` on a log scale with plain tick labels and no minor ticks.

    Call it after plotting and setting limits. Ticks sit at whole powers of ``base``, and also at 2 and
    5 times them when fewer than two powers are in view. Matplotlib's default (TeX-style labels, minor
    ticks at 2 to 9) costs more to draw than the data.
    """
    import math

    import matplotlib.ticker

    if not hasattr(ax, "set_xscale") or not hasattr(ax, "xaxis"):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    if which not in ("x", "y", "both"):
        raise ValueError(f"which must be 'x', 'y' or 'both', got {which!r}")
    base = require_int("base", base, minimum=2)
    for name in ("x", "y") if which == "both" else (which,):
        getattr(ax, f"set_{name}scale")("log", base=base)
        low, high = sorted(getattr(ax, f"get_{name}lim")())
        powers = math.floor(math.log(high, base) + 1e-9) - math.ceil(math.log(low, base) - 1e-9) + 1
        axis = getattr(ax, f"{name}axis")
        axis.set_major_locator(matplotlib.ticker.LogLocator(base, subs=(1.0,) if powers >= 2 else (1.0, 2.0, 5.0)))
        axis.set_minor_locator(matplotlib.ticker.NullLocator())
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _, base=base: log_tick_label(value, base)))
    return ax


def png_bytes(rgba):
    """An RGBA image (height, width, 4) as PNG bytes: zlib level 1 and no row filters, half of Pillow's time."""
    import struct
    import zlib

    import numpy as np

    pixels = np.asarray(rgba)
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 4 or pixels.size == 0:
        raise ValueError(f"rgba must be a non-empty (height, width, 4) uint8 image, got {pixels.dtype} of shape {pixels.shape}")
    height, width = pixels.shape[:2]
    rows = np.empty((height, 1 + 4 * width), dtype=np.uint8)  # (height, 1 + 4 width): filter byte 0 ("none"), then RGBA
    rows[:, 0] = 0
    rows[:, 1:] = pixels.reshape(height, 4 * width)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA, deflate, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b"")


def shown_text_pt(fig):
    """The smallest visible text of ``fig`` in points as shown, at most ``Palette.SHOWN_WIDTH_PX`` wide (readers need 9 or more)."""
    import matplotlib.axes
    import matplotlib.axis
    import matplotlib.figure
    import matplotlib.spines
    import matplotlib.text

    if not isinstance(fig, matplotlib.figure.Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    drawn = fig.get_figwidth() * Palette.DPI
    sizes, artists = [], [fig]
    while artists:  # only what is drawn: findobj would also make and visit every tick of every hidden axis
        artist = artists.pop()
        if not artist.get_visible():
            continue
        if isinstance(artist, matplotlib.text.Text):
            sizes += [artist.get_fontsize()] if artist.get_text().strip() else []
        elif isinstance(artist, matplotlib.axis.Axis):
            artists += [artist.label, artist.offsetText, *artist.get_ticklabels(which="both")]
        else:
            hidden_axes = isinstance(artist, matplotlib.axes.Axes) and not artist.axison
            artists += [c for c in artist.get_children() if not (hidden_axes and isinstance(c, (matplotlib.axis.Axis, matplotlib.spines.Spine)))]
    return min(sizes, default=0) * min(round(drawn), Palette.SHOWN_WIDTH_PX) / drawn


def show_figure(fig, caption, alt=None):
    """Show a figure at most 800 px wide, sharp at twice its pixels, with alt text and its how-to-read caption.

    ``alt`` is one short sentence saying what the figure shows, read by a screen reader before the
    caption; by default it is the caption's first sentence. In a plain script the figure is only closed.
    """
    import re

    import matplotlib.pyplot as plt

    if not isinstance(caption, str) or not caption.strip():
        raise ValueError("every figure needs a caption that says how to read it")
    if alt is not None and (not isinstance(alt, str) or not alt.strip()):
        raise ValueError("alt must be one short sentence saying what the figure shows, or None for the caption's first")
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
    except ImportError:
        kernel = None
    if kernel is not None:
        from IPython.display import Image, Markdown, display

        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig.set_dpi(Palette.DPI * Palette.PIXEL_DENSITY)
        canvas = FigureCanvasAgg(fig)  # draws off-screen whatever backend the kernel uses
        canvas.draw()
        png = png_bytes(canvas.buffer_rgba())
        width = min(round(fig.get_figwidth() * Palette.DPI), Palette.SHOWN_WIDTH_PX)
        # the caption's first sentence: up to a full stop, ? or ! followed by a capital
        alt = alt or re.split(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁ])", " ".join(caption.split()), maxsplit=1)[0]
        # the smallest text as shown, in CSS points (a test of the handouts reads it)
        display(Image(data=png, width=width), metadata={"image/png": {"alt": alt, "smallest_text_pt": round(shown_text_pt(fig), 1)}})
        display(Markdown(f"*{caption}*"))
    plt.close(fig)
