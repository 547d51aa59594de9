"""Run one notebook edition as a script and measure every text of every figure it draws: ``python -m tests.figure_fit PATH``.

Each figure the notebook closes (``show_figure`` closes it once shown) is drawn, and every visible text (titles, labels, tick labels, legends, annotations,
bar labels) is measured with the renderer that drew it. A text *leaves the figure* when its box
reaches more than a pixel past the figure's edge; two texts *overlap* when their boxes share more
than ``OVERLAP_PX`` square pixels (two texts turned by the same angle, slanted tick labels, are not compared:
their upright boxes overlap where the glyphs do not). One JSON line per problem goes to stdout, naming the figure by its
order and its first title; the script's own output goes to stderr.
"""

import contextlib
import json
import runpy
import sys

OVERLAP_PX = 4.0


def _texts(figure, renderer):
    """(label, box) of every visible, non-empty text a draw of ``figure`` painted."""
    from matplotlib.text import Text

    ticks, drawn = set(), set()  # an axis keeps tick labels beyond its limits too, and draws only those within them
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            for tick in axis.majorTicks + axis.minorTicks:
                ticks.update((id(tick.label1), id(tick.label2)))
            if axes.axison and axis.get_visible():  # an axis turned off draws none of its labels
                for tick in axis._update_ticks():
                    drawn.update((id(tick.label1), id(tick.label2)))
    found = []
    for text in figure.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or text.figure is None or (id(text) in ticks and id(text) not in drawn):
            continue
        box = text.get_window_extent(renderer)
        clip = text.get_clip_box() if text.get_clip_on() else None
        if clip is not None and (box.x1 < clip.x0 or box.x0 > clip.x1 or box.y1 < clip.y0 or box.y0 > clip.y1):
            continue  # clipped away entirely: not painted
        found.append((text.get_text().strip().replace("\n", " ")[:60], box, round(text.get_rotation()) % 180))
    return found


def problems(figure, renderer) -> list[dict]:
    """What does not fit in one drawn figure: texts that leave it, and pairs of texts that overlap."""
    texts = _texts(figure, renderer)
    edge = figure.bbox
    found = [{"kind": "leaves the figure", "text": label} for label, box, _ in texts
             if box.x0 < edge.x0 - 1 or box.y0 < edge.y0 - 1 or box.x1 > edge.x1 + 1 or box.y1 > edge.y1 + 1]
    for i, (a, box_a, turn_a) in enumerate(texts):
        for b, box_b, turn_b in texts[i + 1:]:
            if turn_a and turn_a == turn_b:
                continue  # two texts turned alike (slanted tick labels): their upright boxes overlap where the glyphs do not
            width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if width > 0 and height > 0 and width * height > OVERLAP_PX:
                found.append({"kind": "overlap", "text": a, "other": b})
    return found


# A decimal point (0.5): in a translated edition's figure the number is English (a comma there may be a decimal comma).
_ENGLISH_NUMBER = __import__("re").compile(r"(?<![\w.,])\d+\.\d+(?![\w.])")


def english_numbers(figure) -> list[dict]:
    """Texts of a translated edition's figure that write a number with a decimal point (``0.5``), not a version (``5.1``)."""
    from matplotlib.text import Text

    return [{"kind": "English number", "text": text.get_text().strip().replace("\n", " ")[:60]} for text in figure.findobj(Text)
            if text.get_visible() and _ENGLISH_NUMBER.search(text.get_text()) and not _NAMED.search(text.get_text())]


_NAMED = __import__("re").compile(r"(?:[Mm]odule|[Мм]одуль|torch|Python|Llama|Qwen)\s*\d+\.\d")


def main(path: str) -> None:
    """Run the edition at ``path`` with every figure draw measured; print one JSON line per problem."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    drawn = [0]
    original = plt.close

    def close(fig=None):  # show_figure closes each figure in a script: measure it as a kernel would draw it first
        if isinstance(fig, Figure):
            drawn[0] += 1
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            titles = [t.get_text() for t in [fig._suptitle] + [a.title for a in fig.axes] if t is not None and t.get_text()]
            found = problems(fig, canvas.get_renderer()) + (english_numbers(fig) if "/ru/" in path else [])
            for problem in found:
                print(json.dumps({"figure": drawn[0], "title": (titles or [""])[0][:60], **problem}, ensure_ascii=False),
                      file=sys.__stdout__, flush=True)
        return original(fig)

    plt.close = close
    with contextlib.redirect_stdout(sys.stderr):
        runpy.run_path(path, run_name="__main__")
    print(json.dumps({"figures": drawn[0]}), file=sys.__stdout__, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
