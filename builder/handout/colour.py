"""WCAG colour contrast: the ratio of two sRGB colours, and a stylesheet's text colours darkened until they pass."""

import re

from ..contracts.diagrams import contrast_ratio

AA_TEXT = 4.5  # WCAG 2.2 SC 1.4.3, normal-size text
AA_GRAPHICS = 3.0  # WCAG 2.2 SC 1.4.11, lines and other non-text graphics
_HEX = re.compile(r"#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{3})\b")


def rgb(colour: str) -> tuple[float, float, float]:
    """``#RRGGBB`` or ``#RGB`` as three channels from 0 to 1."""
    match = _HEX.fullmatch(colour.strip())
    if match is None:
        raise ValueError(f"colour must be #RRGGBB or #RGB, got {colour!r}")
    digits = match.group(1)
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    red, green, blue = (int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4))
    return red, green, blue


def contrast(foreground: str, background: str) -> float:
    """WCAG contrast ratio of two hex colours, from 1 (same luminance) to 21 (black on white): the notebooks' own rule."""
    return contrast_ratio(rgb(foreground), rgb(background))


def darkened(colour: str, background: str, ratio: float = AA_TEXT) -> str:
    """``colour`` scaled towards black, keeping its hue, just far enough to reach ``ratio`` against ``background``."""
    if contrast(colour, background) >= ratio:
        return colour
    channels = rgb(colour)
    for step in range(1, 101):
        scaled = "#" + "".join(f"{round(c * (1 - step / 100) * 255):02X}" for c in channels)
        if contrast(scaled, background) >= ratio:
            return scaled
    return "#000000"


def accessible_css(css: str, background: str, ratio: float = AA_TEXT) -> str:
    """A stylesheet (Pygments' token colours) with every ``color:`` that fails ``ratio`` on ``background`` darkened."""

    def fix(match: re.Match) -> str:
        return match.group(1) + darkened(match.group(2), background, ratio)

    return re.sub(r"((?<![-\w])color:\s*)(#[0-9A-Fa-f]{6}\b|#[0-9A-Fa-f]{3}\b)", fix, css)
