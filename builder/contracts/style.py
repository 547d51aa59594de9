"""One look for every figure in the course, English or Russian labels, and captioned display."""

from .validation import require_int, require_real

__all__ = ["LANGUAGES", "Palette", "apply_plot_style", "localized", "log_scale", "log_tick_label", "show_figure"]

LANGUAGES = ("en", "ru")


class Palette:
    """The course colours, one name per role, shared by every figure."""

    BLUE = "#5E81AC"
    GREEN = "#A3BE8C"
    ORANGE = "#D08770"
    RED = "#BF616A"
    PURPLE = "#8F6BA8"
    YELLOW = "#EBCB8B"
    INK = "#2E3440"
    MUTED = "#4C566A"
    GREY = "#9AA5B8"
    BORDER = "#D8DEE9"
    PAPER = "#ECEFF4"


def apply_plot_style():
    """Set matplotlib defaults once: fonts, colours, grid and a modest resolution for fast rendering."""
    import matplotlib

    matplotlib.rcParams.update({
        "font.family": "DejaVu Sans",
        "font.size": 11,
        "text.color": Palette.INK,
        "axes.labelcolor": Palette.INK,
        "axes.titlecolor": Palette.INK,
        "axes.titlesize": 13,
        "axes.titleweight": "bold",
        "axes.titlelocation": "left",
        "axes.titley": 1.0,  # a fixed title height: automatic placement lays out every tick label once more per draw
        "axes.labelsize": 11,
        "axes.edgecolor": Palette.BORDER,
        "axes.linewidth": 0.8,
        "axes.grid": True,
        "axes.axisbelow": True,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": matplotlib.cycler(color=[Palette.BLUE, Palette.ORANGE, Palette.GREEN, Palette.RED, Palette.PURPLE, Palette.YELLOW]),
        "grid.color": Palette.BORDER,
        "grid.linewidth": 0.6,
        "xtick.color": Palette.MUTED,
        "ytick.color": Palette.MUTED,
        "legend.frameon": False,
        "legend.fontsize": 10,
        "figure.facecolor": "white",
        "figure.dpi": 90,
        "savefig.dpi": 90,
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


def show_figure(fig, caption):
    """Show a figure with its how-to-read caption (the caption is also the image's alt text).

    In a Jupyter kernel the figure is displayed as a PNG; in a plain script it is only closed.
    """
    import io

    import matplotlib.pyplot as plt

    if not isinstance(caption, str) or not caption.strip():
        raise ValueError("every figure needs a caption that says how to read it")
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
    except ImportError:
        kernel = None
    if kernel is not None:
        from IPython.display import Image, Markdown, display

        buffer = io.BytesIO()
        # zlib level 1: a PNG about 8% larger, written in a fraction of the default level's time
        fig.savefig(buffer, format="png", metadata={"Software": None}, pil_kwargs={"compress_level": 1})
        display(Image(data=buffer.getvalue()), metadata={"image/png": {"alt": caption}})
        display(Markdown(f"*{caption}*"))
    plt.close(fig)
