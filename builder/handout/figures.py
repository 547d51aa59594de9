"""Figures in a handout: every figure output carries alt text (show_figure's one sentence, else its caption) and a figcaption."""

import re

import nbformat

from .errors import HandoutError

FIGURE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")


def _caption_text(markdown: str) -> str:
    """A caption written as ``*text*`` or ``_text_``, without the emphasis markers."""
    text = markdown.strip()
    for mark in ("**", "*", "__", "_"):
        if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
            return text[len(mark):-len(mark)].strip()
    return text


def alt_text(caption: str) -> str:
    """Caption Markdown as plain alt text: outer emphasis, bold marks, backticks and math dollars dropped.

    The LaTeX itself stays (``\\sqrt{d_k}``): a screen reader spells it, which beats nothing.
    """
    text = _caption_text(caption)
    text = re.sub(r"(?<!\\)\$\$?", "", text)
    text = re.sub(r"\*\*|`", "", text)
    return " ".join(text.split())


def attach_captions(nb: nbformat.NotebookNode, name: str) -> None:
    """Give every figure output its alt text and caption; fail on a figure without a caption.

    The alt text comes from the ``alt`` that ``show_figure`` writes into the output metadata,
    else from the Markdown caption output right after the figure. That caption output is folded
    into the figure, so the page keeps image and caption together.
    """
    for index, cell in enumerate(nb.cells):
        outputs = cell.get("outputs", [])
        kept = []
        skip = False
        for number, output in enumerate(outputs):
            if skip:
                skip = False
                continue
            kept.append(output)
            data = output.get("data", {})
            mime = next((m for m in FIGURE_TYPES if m in data), None)
            if mime is None:
                continue
            following = outputs[number + 1] if number + 1 < len(outputs) else None
            caption = None
            if following is not None and "text/markdown" in following.get("data", {}):
                caption = following["data"]["text/markdown"]
                skip = True
            meta = output.setdefault("metadata", {})
            own = meta.get(mime) if isinstance(meta.get(mime), dict) else {}
            alt = own.get("alt") or (caption and _caption_text(caption))
            if not alt or not alt.strip():
                raise HandoutError(
                    f"{name}: cell {index}: figure (output {number}) has no caption to use as alt text; "
                    "display it with show_figure(fig, caption)"
                )
            meta[mime] = {**own, "alt": alt_text(alt)}
            meta["handout"] = {"caption": _caption_text(caption) if caption else None, "where": f"{name}: cell {index} (figure caption)"}
        cell["outputs"] = kept
