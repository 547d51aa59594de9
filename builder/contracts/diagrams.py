"""The lesson's diagrams as matplotlib figures: boxes, arrows and token rows drawn on an inch grid.

Each ``draw_*`` function takes the numbers it shows from the notebook (masks, fields, scan
rounds, layer kinds) and returns a figure for ``show_figure``. The canvas has no layout
engine: one axes fills the figure and its data units are inches, so a box placed at x = 2
sits two inches from the left edge in every language.
"""

from .style import Palette, localized
from .validation import require_int, require_mask, require_real

__all__ = [
    "srgb_to_linear", "contrast_ratio", "text_color_on", "diagram_canvas", "diagram_box", "diagram_arrow",
    "draw_taxonomy", "draw_kv_trip", "draw_window_relay", "draw_rolling_buffer",
    "draw_global_tokens", "draw_mla_flow", "draw_scan_tree", "draw_layer_stacks",
]


def srgb_to_linear(color):
    """The three channels of an opaque colour (any matplotlib colour) without sRGB's gamma (IEC 61966-2-1), each from 0 to 1."""
    from matplotlib.colors import to_rgb

    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(color))


def contrast_ratio(first, second):
    """The WCAG 2.2 contrast ratio of two opaque colours: 1 for equal luminance, 21 for black on white."""

    def luminance(color):
        red, green, blue = srgb_to_linear(color)
        return 0.2126 * red + 0.7152 * green + 0.0722 * blue

    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_color_on(fill):
    """White, ink or black, the first whose WCAG contrast ratio with the opaque ``fill`` reaches 4.5:1."""
    return next((c for c in ("white", Palette.INK) if contrast_ratio(c, fill) >= 4.5), "black")


def diagram_canvas(width, height):
    """A blank figure whose data units are inches of a width x height drawing, (0, 0) at the bottom left.

    A drawing wider than the shown width is made smaller as a whole, so its text is shown at the size it names.
    """
    import matplotlib.pyplot as plt

    width = require_real("width", width, minimum=0.0, strict_minimum=True)
    height = require_real("height", height, minimum=0.0, strict_minimum=True)
    scale = min(1.0, Palette.SHOWN_WIDTH_PX / (width * Palette.DPI))
    fig = plt.figure(figsize=(width * scale, height * scale))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return fig, ax


def diagram_box(ax, x, y, width, height, text, color, *, solid=False, dashed=False, size=9, weight="normal"):
    """A rounded box centred at (x, y) holding centred text: tinted in ``color`` (or solid, with text that contrasts with it)."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import FancyBboxPatch

    ax.add_artist(FancyBboxPatch(
        (x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0,rounding_size=0.06",
        facecolor=color if solid else to_rgba(color, 0.16), edgecolor=color, linewidth=1.1,
        linestyle=(0, (3, 2)) if dashed else "-",
    ))
    ax.text(x, y, text, ha="center", va="center", fontsize=size, weight=weight,
            color=text_color_on(color) if solid else Palette.INK, linespacing=1.15)


def diagram_arrow(ax, start, end, *, color=Palette.MUTED, text=None, at=0.5, shift=(0.0, 0.0), dashed=False, width=1.1, size=9):
    """An arrow from ``start`` to ``end`` (inches), with an optional label at fraction ``at`` along it, moved by ``shift``."""
    ax.annotate("", xy=end, xytext=start, arrowprops={
        "arrowstyle": "-|>", "color": color, "linewidth": width, "shrinkA": 0, "shrinkB": 0,
        "mutation_scale": 9, "linestyle": (0, (3, 2)) if dashed else "-",
    })
    if text:
        x = start[0] + at * (end[0] - start[0]) + shift[0]
        y = start[1] + at * (end[1] - start[1]) + shift[1]
        ax.text(x, y, text, ha="center", va="center", fontsize=size, color=color, linespacing=1.1)


def draw_taxonomy(language="en"):
    """The map of efficient designs: the problem, three strategies, their designs, and hybrids."""
    from functools import partial

    fig, ax = diagram_canvas(8.6, 3.7)
    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    diagram_box(ax, 4.3, 3.3, 6.4, 0.5, t("Long context is expensive: compute grows with n², memory with n",
                                          "Длинный контекст дорог: вычисления растут как n², память как n"), Palette.RED, solid=True, size=10)
    columns = (
        (1.45, Palette.BLUE, t("Look at fewer tokens", "Читать меньше токенов"),
         (t("sparse: local + global,\nstrided, a learned shortlist", "разреженное: локальное +\nглобальное, с шагом, отбор"),
          t("sliding window", "скользящее окно"))),
        (4.3, Palette.GREEN, t("Keep a fixed-size summary", "Хранить сводку\nфиксированного размера"),
         (t("linear attention", "линейное внимание"), t("state-space models\n(Mamba)", "модели пространства\nсостояний (Mamba)"))),
        (7.15, Palette.ORANGE, t("Store the past compactly", "Хранить прошлое компактно"),
         (t("GQA / MQA: fewer KV heads", "GQA / MQA: меньше KV-голов"), t("latent KV (MLA)", "латентный KV (MLA)"),
          t("quantized KV: fewer bits", "квантованный KV: меньше бит"))),
    )
    leaf_y = (1.85, 1.2, 0.55)
    for x, color, title, leaves in columns:
        diagram_arrow(ax, (x + (4.3 - x) * 0.55, 3.05), (x, 2.72))
        diagram_box(ax, x, 2.48, 2.6, 0.46, title, color, size=9.5, weight="bold")
        spine = x - 1.18
        ax.plot([spine, spine], [2.25, leaf_y[len(leaves) - 1]], color=color, linewidth=1.1)
        for y, leaf in zip(leaf_y, leaves):
            diagram_arrow(ax, (spine, y), (x - 1.0, y), color=color)
            diagram_box(ax, x + 0.17, y, 2.34, 0.5, leaf, color, dashed=True, size=9)
    diagram_box(ax, 2.9, 0.38, 2.2, 0.5, t("hybrids: a few attention\nlayers among SSM layers", "гибриды: немного слоёв\nвнимания среди SSM"),
                Palette.PURPLE, size=9)
    diagram_arrow(ax, (1.62, 0.95), (2.3, 0.63), color=Palette.PURPLE)
    diagram_arrow(ax, (4.47, 0.95), (3.55, 0.63), color=Palette.PURPLE)
    return fig


def draw_kv_trip(bytes_per_token, layers, language="en"):
    """One decoding step: the new token's key and value join the cache, its query reads every cached key and value."""
    from functools import partial
    from matplotlib.patches import Rectangle

    fig, ax = diagram_canvas(8.6, 3.0)
    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    slots = ("₁", "₂", "₃", "…", "ₙ₋₁", "ₙ")  # subscripts as characters: no mathtext to parse
    xs = [0.75 + 0.8 * i for i in range(len(slots))]
    ax.add_artist(Rectangle(
        (0.2, 0.55), 5.1, 1.35, facecolor=Palette.PAPER, edgecolor=Palette.BORDER, linewidth=1))
    ax.text(0.3, 1.75, t("KV cache of one layer", "KV-кэш одного слоя"), fontsize=9, weight="bold", va="center")
    for i, (x, label) in enumerate(zip(xs, slots)):
        new = i == len(slots) - 1
        for y, row in ((1.36, "k"), (0.86, "v")):
            text = label if label == "…" else row + label
            diagram_box(ax, x, y, 0.62, 0.36, text, Palette.ORANGE if new else Palette.BLUE, solid=new, size=10)
    diagram_box(ax, xs[-1], 2.62, 1.5, 0.42, t("new token n", "новый токен n"), Palette.ORANGE, solid=True)
    diagram_arrow(ax, (xs[-1], 2.41), (xs[-1], 1.56), color=Palette.ORANGE,
                  text=t("its key and value\nare appended", "его ключ и значение\nдописываются"), at=0.45, shift=(-1.0, 0))
    diagram_box(ax, 7.45, 2.62, 1.3, 0.42, t("its query q", "его запрос q"), Palette.ORANGE)
    diagram_arrow(ax, (xs[-1] + 0.75, 2.62), (6.8, 2.62), color=Palette.ORANGE)
    diagram_box(ax, 7.45, 1.35, 2.0, 0.8, t("scores q·k for all\nn keys, softmax,\nmix the n values",
                                           "оценки q·k для всех\nn ключей, softmax,\nсмесь n значений"), Palette.BLUE, size=9)
    diagram_arrow(ax, (7.45, 2.41), (7.45, 1.75), color=Palette.ORANGE)
    diagram_arrow(ax, (5.3, 1.2), (6.45, 1.2), color=Palette.BLUE, text=t("reads all n", "читает все n"), shift=(0, 0.14))
    diagram_box(ax, 7.45, 0.35, 2.0, 0.4, t("output for token n", "выход для токена n"), Palette.BLUE, solid=True)
    diagram_arrow(ax, (7.45, 0.95), (7.45, 0.55), color=Palette.BLUE)
    kib = bytes_per_token / 1024
    ax.text(0.2, 0.28, t(f"one key + one value per KV head, in each of {layers} layers:\n{kib:,.0f} KiB per token, kept while the conversation lasts",
                         f"по ключу и значению на KV-голову в каждом из {layers} слоёв:\n{kib:,.0f} КиБ на токен, пока идёт диалог"),
            fontsize=9, color=Palette.MUTED, va="center", linespacing=1.25)
    return fig


def draw_window_relay(allowed, fields, language="en"):
    """Left: the window mask as a grid of ticks; right: how stacked windowed layers relay the last token's inputs.

    ``allowed`` is the boolean [n, n] mask of one layer, ``fields[k]`` the boolean receptive field after k layers.
    """
    from functools import partial
    import numpy as np
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Circle
    from matplotlib.path import Path

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    allowed = require_mask("allowed", allowed)
    n = require_int("the mask's side", allowed.shape[0], minimum=2, maximum=10)  # the relay row holds at most 10 tokens
    if allowed.shape != (n, n) or not isinstance(fields, (list, tuple)) or not fields:
        raise ValueError(f"draw_window_relay needs a square mask and a non-empty list of fields, got a mask of shape {allowed.shape}")
    fields = [require_mask(f"fields[{k}]", field) for k, field in enumerate(fields)]
    if any(field.shape != (n, n) for field in fields):
        raise ValueError(f"every field must have the mask's shape {(n, n)}, got {[f.shape for f in fields]}")
    layers = len(fields) - 1
    fig, ax = diagram_canvas(8.6, 3.5)
    cell, left, top = 0.3, 0.95, 2.75
    rows, cols = np.nonzero(allowed)
    tick = [(-0.5, 0.05), (-0.15, -0.35), (0.5, 0.45)]  # a check mark as a marker path: one artist for every cell
    ax.scatter(left + cols * cell, top - rows * cell, s=60, marker=Path(tick, [Path.MOVETO, Path.LINETO, Path.LINETO]),
               facecolors="none", edgecolors=Palette.BLUE, linewidths=1.6)
    rows, cols = np.nonzero(~allowed)
    ax.scatter(left + cols * cell, top - rows * cell, s=4, color=Palette.GREY, linewidths=0)
    for i in range(n):
        ax.text(left - 0.22, top - i * cell, str(i), ha="right", va="center", fontsize=9, color=Palette.MUTED)
        ax.text(left + i * cell, top + 0.27, str(i), ha="center", va="center", fontsize=9, color=Palette.MUTED)
    ax.text(left - 0.22, top + 0.27, t("q \\ k", "з \\ к"), ha="right", va="center", fontsize=9, color=Palette.MUTED)
    counts = [int(c) for c in allowed.sum(axis=1)]
    growing = [c for c in counts if c < counts[-1]]
    total = " + ".join([str(c) for c in growing] + [f"{counts[-1]} × {len(counts) - len(growing)}"])
    ax.text(0.1, 3.33, t(f"One layer, w = {counts[-1]}: {sum(counts)} scores, not {n * (n + 1) // 2}",
                         f"Один слой, w = {counts[-1]}: оценок {sum(counts)}, а не {n * (n + 1) // 2}"), fontsize=10, weight="bold", va="center")
    ax.text(0.1, top - n * cell + 0.02, t(f"rows: queries i, columns: keys j; {total} = {sum(counts)}",
                                          f"строки: запросы i, столбцы: ключи j; {total} = {sum(counts)}"),
            va="center", fontsize=9, color=Palette.MUTED)
    # The relay: token n - 1 at the top, the inputs it can hear at each level below.
    last, x0, dx, ys = n - 1, 5.0, 0.47, [0.45 + 0.78 * k for k in range(layers + 1)]
    names = [t("input", "вход")] + [t(f"layer {k}", f"слой {k}") for k in range(1, layers + 1)]
    chain = [last - int(np.argmax(fields[k][last])) for k in range(layers + 1)]  # how far back each level reaches
    edges, heard = [], [np.asarray(fields[layers - level][last], dtype=bool) for level in range(layers + 1)]
    for level in range(1, layers + 1):
        for i in np.flatnonzero(heard[level]):
            edges += [((x0 + j * dx, ys[level - 1]), (x0 + i * dx, ys[level])) for j in np.flatnonzero(allowed[i]) if heard[level - 1][j]]
    ax.add_collection(LineCollection(edges, colors=Palette.BORDER, linewidths=0.9, zorder=1))
    for level, y in enumerate(ys):
        ax.text(x0 - 0.3, y, names[level], ha="right", va="center", fontsize=9, color=Palette.MUTED)
        target = last - chain[layers - level]  # the furthest token this level relays
        for j in range(n):
            on_path, near = j == target, bool(heard[level][j])
            color = Palette.BLUE if near else (Palette.RED if level == 0 else Palette.BORDER)
            ax.add_artist(Circle((x0 + j * dx, y), 0.15, zorder=2, linewidth=1.1, edgecolor=color,
                                facecolor=color if on_path else ("#E4EAF3" if near else "white")))
            if on_path or level == 0:  # the input row numbers every column; above it only the relay is numbered
                ax.text(x0 + j * dx, y, str(j), ha="center", va="center", fontsize=9, zorder=3, color=text_color_on(color) if on_path else Palette.INK)
    for level in range(layers):
        a, b = last - chain[layers - level], last - chain[layers - level - 1]
        diagram_arrow(ax, (x0 + a * dx + 0.08, ys[level] + 0.14), (x0 + b * dx - 0.08, ys[level + 1] - 0.14), color=Palette.BLUE, width=1.6)
    out = [j for j in range(n) if not heard[0][j]]
    if out:
        ax.text(x0 + out[-1] * dx, ys[0] - 0.31, t("out of reach", "вне охвата"), ha="left" if out[-1] == 0 else "center",
                va="center", fontsize=9, color=Palette.RED)
    ax.text(x0 - 0.9, 3.33, t(f"{layers} layers: token {last} hears token {last - chain[-1]}, {chain[-1]} back",
                              f"{layers} слоя: токен {last} слышит токен {last - chain[-1]}, на {chain[-1]} назад"), fontsize=10, weight="bold", va="center")
    return fig


def draw_rolling_buffer(window, token, language="en"):
    """The rolling buffer of ``window`` slots before and after ``token`` arrives: it lands in slot token mod window."""
    from functools import partial

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    window = require_int("window", window, minimum=1, maximum=5)  # the two buffers hold at most 5 slots each
    token = require_int("token", token, minimum=window, maximum=11)  # a token row of 12, one of them evicted
    fig, ax = diagram_canvas(8.6, 2.9)
    first, slot = token - window + 1, token % window
    for j in range(token + 1):
        x = 1.35 + 0.64 * j
        kept, evicted = j >= first, j == first - 1
        diagram_box(ax, x, 2.2, 0.52, 0.4, str(j), Palette.ORANGE if j == token else (Palette.BLUE if kept else (Palette.RED if evicted else Palette.GREY)),
                    solid=j == token, dashed=evicted)
    ax.text(0.15, 2.2, t("tokens", "токены"), va="center", fontsize=9, color=Palette.MUTED)
    ax.plot([1.35 + 0.64 * first - 0.28, 1.35 + 0.64 * token + 0.28], [2.55, 2.55], color=Palette.BLUE, linewidth=2, marker="none")
    ax.text(1.35 + 0.64 * (first + token) / 2, 2.72, t(f"window: the last {window} tokens", f"окно: последние {window} токена"),
            ha="center", va="center", fontsize=9, color=Palette.BLUE)
    ax.text(1.35 + 0.64 * (first - 1), 2.72, t("leaves", "уходит"), ha="center", va="center", fontsize=9, color=Palette.RED)
    for start, upto, title in ((0.9, token - 1, t(f"buffer after token {token - 1}", f"буфер после токена {token - 1}")),
                               (5.2, token, t(f"buffer after token {token}", f"буфер после токена {token}"))):
        ax.text(start - 0.3, 1.35, title, va="center", fontsize=9, weight="bold")
        for s in range(window):
            held = max(j for j in range(upto + 1) if j % window == s)  # the newest token that went to slot s
            changed = s == slot
            color = (Palette.ORANGE if upto == token else Palette.RED) if changed else Palette.BLUE
            diagram_box(ax, start + 0.7 * s, 0.85, 0.58, 0.42, str(held), color, solid=changed and upto == token, dashed=changed and upto < token)
            ax.text(start + 0.7 * s, 0.45, t(f"slot {s}", f"слот {s}"), ha="center", va="center", fontsize=9, color=Palette.MUTED)
    diagram_arrow(ax, (0.9 + 0.7 * window - 0.2, 0.85), (5.2 - 0.4, 0.85), color=Palette.ORANGE,
                  text=t(f"slot = {token} mod {window} = {slot}:\noverwrite token {token - window}", f"слот = {token} mod {window} = {slot}:\nзаменить токен {token - window}"),
                  shift=(0, 0.27), size=9)
    ax.text(5.2 - 0.3, 0.15, t(f"token {token} reads slots holding {', '.join(str(j) for j in range(first, token + 1))}",
                               f"токен {token} читает слоты с токенами {', '.join(str(j) for j in range(first, token + 1))}"),
            va="center", fontsize=9, color=Palette.MUTED)
    return fig


def draw_global_tokens(allowed, global_tokens, language="en"):
    """Tokens on a line: arcs above link global tokens to everyone, arcs below are the local window's pairs."""
    from functools import partial
    import numpy as np
    from matplotlib.collections import LineCollection

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    allowed = require_mask("allowed", allowed)
    n = require_int("the mask's side", allowed.shape[0], minimum=1, maximum=16)  # 16 tokens fill the row
    if allowed.shape != (n, n):
        raise ValueError(f"allowed must be a square mask, got shape {allowed.shape}")
    global_tokens = [require_int("a global token", j, minimum=0, maximum=n - 1) for j in global_tokens]
    fig, ax = diagram_canvas(8.6, 3.0)
    dx, x0, y0 = 0.5, 0.55, 1.35
    theta = np.linspace(0, np.pi, 24)
    arcs = {True: [], False: []}
    for i, j in zip(*np.nonzero(np.tril(allowed, -1))):  # every allowed pair except a token with itself
        is_global = i in global_tokens or j in global_tokens
        half, height = (i - j) * dx / 2, (0.2 + 0.065 * (i - j)) * (1 if is_global else -1)
        xs = x0 + j * dx + half * (1 - np.cos(theta))
        arcs[is_global].append(np.column_stack([xs, y0 + (0.2 if is_global else -0.2) + height * np.sin(theta)]))
    ax.add_collection(LineCollection(arcs[True], colors=Palette.ORANGE, linewidths=1.1))
    ax.add_collection(LineCollection(arcs[False], colors=Palette.BLUE, linewidths=0.9, alpha=0.8))
    for j in range(n):
        glob = j in global_tokens
        diagram_box(ax, x0 + j * dx, y0, 0.36, 0.36, str(j), Palette.ORANGE if glob else Palette.BLUE, solid=glob, size=9)
    pairs, full = int(allowed.sum()), n * (n + 1) // 2
    ax.text(0.1, 2.8, t(f"Window + global token: {pairs} pairs, not {full}", f"Окно + глобальный токен: {pairs} пар, а не {full}"),
            fontsize=10.5, weight="bold", va="center")
    ax.text(0.1, 0.32, t("arcs above: every later token reads the global token 0", "дуги сверху: каждый следующий токен читает глобальный токен 0"),
            va="center", fontsize=9, color=Palette.ORANGE)
    ax.text(0.1, 0.12, t("arcs below: each token reads its recent neighbours (the window)", "дуги снизу: каждый токен читает недавних соседей (окно)"),
            va="center", fontsize=9, color=Palette.BLUE)
    return fig


def draw_mla_flow(latent, rope, heads, expanded, language="en"):
    """MLA's absorbed data flow: cache the latent and a RoPE key; the query moves into latent space, no key is built.

    ``expanded`` is what full keys and values of all ``heads`` would cost per token and layer, in numbers.
    """
    from functools import partial

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    fig, ax = diagram_canvas(8.6, 3.4)
    diagram_box(ax, 0.85, 2.75, 1.4, 0.55, t("token x\n(d_model)", "токен x\n(d_model)"), Palette.BLUE)
    diagram_box(ax, 3.45, 2.75, 2.3, 0.62, t(f"cache: latent c ({latent})\n+ RoPE key ρ ({rope}) = {latent + rope}",
                                           f"кэш: латент c ({latent})\n+ RoPE-ключ ρ ({rope}) = {latent + rope}"), Palette.ORANGE, solid=True, size=9)
    diagram_arrow(ax, (1.55, 2.75), (2.3, 2.75), text="W_down", shift=(0, 0.16))
    diagram_box(ax, 6.9, 2.75, 2.6, 0.62, t(f"keys and values of all\n{heads} heads: never built",
                                          f"ключи и значения всех\n{heads} голов: не строятся"), Palette.GREY, dashed=True, size=9)
    diagram_arrow(ax, (4.6, 2.75), (5.6, 2.75), color=Palette.GREY, dashed=True, text="W_uk, W_uv", shift=(0, 0.16))
    diagram_box(ax, 0.85, 1.35, 1.4, 0.55, t("query q\nof head h", "запрос q\nголовы h"), Palette.BLUE)
    diagram_box(ax, 3.45, 1.35, 2.3, 0.62, t(f"q W_ukᵀ: the query\nin latent space ({latent})", f"q W_ukᵀ: запрос\nв латентном пространстве ({latent})"),
                Palette.BLUE, size=9)
    diagram_arrow(ax, (1.55, 1.35), (2.3, 1.35), text=t("absorb", "поглотить"), shift=(0, 0.16))
    diagram_arrow(ax, (3.45, 1.66), (3.45, 2.44), color=Palette.BLUE, text=t("score against c\n(+ RoPE part · ρ)", "оценка по c\n(+ RoPE-часть · ρ)"),
                  shift=(1.0, 0), size=9)
    diagram_box(ax, 6.9, 1.35, 2.6, 0.62, t(f"softmax weights mix the\ncached latents ({latent} wide)", f"веса softmax смешивают\nлатенты кэша (размерность {latent})"),
                Palette.BLUE, size=9)
    diagram_arrow(ax, (4.6, 1.35), (5.6, 1.35), color=Palette.BLUE)
    diagram_arrow(ax, (4.6, 2.55), (6.1, 1.66), color=Palette.ORANGE, text=t("c again, as the values", "снова c, как значения"),
                  at=0.62, shift=(0.75, 0.08), size=9)
    diagram_box(ax, 6.9, 0.3, 2.6, 0.45, t("× W_uv W_o: output", "× W_uv W_o: выход"), Palette.BLUE, solid=True)
    diagram_arrow(ax, (6.9, 1.04), (6.9, 0.53), color=Palette.BLUE)
    ax.text(0.15, 0.3, t(f"cached per token and layer: {latent + rope} numbers,\nnot {expanded:,} for full keys and values",
                         f"в кэше на токен и слой: {latent + rope} чисел,\nа не {expanded:,} для полных ключей и значений"),
            va="center", fontsize=9, color=Palette.MUTED, linespacing=1.25)
    return fig


def draw_scan_tree(levels, language="en"):
    """The parallel scan as a tree: ``levels[r]`` holds each position's merged step (λ, μ) after round r."""
    from functools import partial

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    steps, rounds = len(levels[0]), len(levels) - 1
    fig, ax = diagram_canvas(8.6, 0.95 * rounds + 1.25)
    xs = [2.3 + 1.75 * i for i in range(steps)]
    ys = [0.95 * (rounds - r) + 0.45 for r in range(rounds + 1)]
    for i, x in enumerate(xs):
        ax.text(x, ys[0] + 0.45, t(f"step t = {i + 1}", f"шаг t = {i + 1}"), ha="center", va="center", fontsize=9, color=Palette.MUTED)
    for r, y in enumerate(ys):
        label = t("the steps (λ, μ)", "шаги (λ, μ)") if r == 0 else t(f"round {r}: shift {2 ** (r - 1)}", f"раунд {r}: сдвиг {2 ** (r - 1)}")
        ax.text(0.15, y, label, va="center", fontsize=9, color=Palette.MUTED)
        for i, (a, b) in enumerate(levels[r]):
            final = r == rounds
            diagram_box(ax, xs[i], y, 1.3, 0.4, f"({a:g}, {b:g})", Palette.GREEN if final else Palette.BLUE, size=9, weight="bold" if final else "normal")
            if r:
                diagram_arrow(ax, (xs[i], ys[r - 1] - 0.2), (xs[i], y + 0.2))
                if i >= 2 ** (r - 1):
                    diagram_arrow(ax, (xs[i - 2 ** (r - 1)] + 0.3, ys[r - 1] - 0.2), (xs[i] - 0.3, y + 0.2), color=Palette.BLUE)
    ax.text(xs[-1] + 0.72, ys[-1] - 0.37, t("last round: each μ is the state h_t", "последний раунд: каждое μ есть состояние h_t"), ha="right", va="center",
            fontsize=9, color=Palette.MUTED)
    return fig


def draw_layer_stacks(stacks, language="en"):
    """One row of blocks per model, one block per layer, coloured and sized by what the layer keeps; ``stacks`` is [(name, note, kinds)].

    Each kind is "attention" (a cache that grows with n), "window" (at most w tokens) or "ssm" (a fixed state).
    """
    from functools import partial
    from matplotlib.patches import Rectangle

    t = partial(localized, language)  # t(english, russian): the label in this figure's language
    colors = {"attention": Palette.ORANGE, "window": Palette.YELLOW, "ssm": Palette.BLUE}
    tall = {"attention": 0.4, "window": 0.26, "ssm": 0.12}  # a second cue besides colour: what a layer keeps, as height
    height = 0.72 * len(stacks) + 0.95
    fig, ax = diagram_canvas(8.6, height)
    legend = ((colors["attention"], t("attention: cache grows with n", "внимание: кэш растёт с n")),
              (colors["window"], t("window: at most w tokens", "окно: не больше w токенов")),
              (colors["ssm"], t("SSM: fixed state", "SSM: фиксированное состояние")))
    for k, (color, text) in enumerate(legend):  # legend swatches in the same order and heights as ``tall``
        ax.add_artist(Rectangle((0.15 + 2.85 * k, height - 0.38), 0.22, 0.22 * tuple(tall.values())[k] / 0.4, color=color))
        ax.text(0.45 + 2.85 * k, height - 0.27, text, va="center", fontsize=9)
    longest = max(len(kinds) for _, _, kinds in stacks)
    width = min(0.2, 5.4 / longest)
    for row, (name, note, kinds) in enumerate(stacks):
        y = height - 0.95 - 0.72 * row
        ax.text(0.15, y + 0.12, name, va="center", fontsize=9, weight="bold")
        ax.text(0.15, y - 0.13, note, va="center", fontsize=9, color=Palette.MUTED)
        for kind in colors:
            spans = [(3.0 + layer * width, width * 0.82) for layer, each in enumerate(kinds) if each == kind]
            ax.broken_barh(spans, (y - 0.2, tall[kind]), facecolors=colors[kind], linewidth=0)
    ax.annotate("", xy=(3.0 + longest * width, 0.2), xytext=(3.0, 0.2),
                arrowprops={"arrowstyle": "-|>", "color": Palette.MUTED, "linewidth": 1, "mutation_scale": 9})
    ax.text(3.0, 0.05 + 0.3, t("layer 0: tokens in", "слой 0: токены на входе"), fontsize=9, color=Palette.MUTED, va="center")
    ax.text(3.0 + longest * width, 0.35, t("last layer: next-token scores", "последний слой: оценки следующего токена"), ha="right",
            fontsize=9, color=Palette.MUTED, va="center")
    return fig
