"""LaTeX to MathML at export time, so Chromium draws math natively; a formula that does not convert names its cell.

Each distinct expression is converted once per process (``convert``), and each Markdown text rendered once
(``markdown_to_html``), however many variants or checks ask for it.
"""

import functools
import html
import json
import re

import nbformat
from bs4 import BeautifulSoup
from latex2mathml.converter import convert as latex2mathml_convert
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from .errors import HandoutError, MathError

# A LaTeX control word that survived conversion: latex2mathml passes unknown commands through as text.
_LEFTOVER_COMMAND = re.compile(r"\\[A-Za-z]+")
_TAG = re.compile(r"<[^>]*>")
_XMLNS = re.compile(r'\s+xmlns="[^"]*"')
_IMG_TAG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)


def latex_to_mathml(latex: str, *, display: bool) -> str:
    """MathML for one LaTeX expression; MathError when latex2mathml fails or leaves a command as text.

    A display formula that lists equations apart with ``\\quad`` becomes one ``<mrow>`` per
    equation in a ``<math class="wrap-points">``: on screen it is one line (it scrolls when wide),
    in print the stylesheet lets the equations wrap onto the next line instead of being clipped.
    """
    pieces = split_at_quads(latex.strip()) if display else []
    if len(pieces) < 2:
        mathml, problem = convert(latex.strip(), display)
        if problem:
            raise MathError(problem)
        return _with_alttext(mathml, latex)
    rows = []
    for piece in pieces:
        mathml, problem = convert(piece, True)
        if problem:
            raise MathError(problem)
        rows.append(f"<mrow>{_inner(mathml)}</mrow>")
    joined = '<mspace width="1em"></mspace>'.join(rows)
    return _with_alttext(f'<math display="block" class="wrap-points"><mrow>{joined}</mrow></math>', latex)


def _with_alttext(mathml: str, latex: str) -> str:
    """The ``<math>`` element with its TeX source as ``alttext``, which a screen reader can read out."""
    return mathml.replace("<math", f'<math alttext="{html.escape(" ".join(latex.split()), quote=True)}"', 1)


_QUAD = re.compile(r"\\q?quad(?![A-Za-z])|\\left(?![A-Za-z])|\\right(?![A-Za-z])|[{}]")


def split_at_quads(latex: str) -> list[str]:
    """The parts of ``latex`` between top-level ``\\quad``/``\\qquad`` (outside braces and ``\\left...\\right``)."""
    pieces, depth, start = [], 0, 0
    for match in _QUAD.finditer(latex):
        token = match.group()
        if token in ("{", "\\left"):
            depth += 1
        elif token in ("}", "\\right"):
            depth -= 1
        elif depth == 0:
            pieces.append(latex[start:match.start()])
            start = match.end()
    pieces.append(latex[start:])
    return [p.strip() for p in pieces if p.strip()]


def _inner(mathml: str) -> str:
    """The content of a ``<math>`` element, without its outer ``<math>`` and ``<mrow>``."""
    inner = re.sub(r"^<math[^>]*>|</math>$", "", mathml)
    if inner.startswith("<mrow>") and inner.endswith("</mrow>") and inner.count("<mrow>") == 1:
        inner = inner[len("<mrow>"):-len("</mrow>")]
    return inner


@functools.cache
def convert(latex: str, display: bool) -> tuple[str, str]:
    """(MathML, "") for one stripped expression, or ("", the reason it does not convert); cached."""
    unbalanced = _unbalanced_braces(latex)
    if unbalanced:
        return "", unbalanced
    try:
        mathml = latex2mathml_convert(latex, display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises many private exception types
        return "", f"latex2mathml failed: {type(exc).__name__} {exc}".strip()
    leftover = _LEFTOVER_COMMAND.findall(html.unescape(_TAG.sub(" ", mathml)))
    if leftover:
        return "", f"unknown command(s) {', '.join(sorted(set(leftover)))} would show as raw text"
    if re.search(r"\s(href|src|xlink:href)\s*=", mathml, re.IGNORECASE):
        return "", "links (\\href, \\url) are not allowed in handout math: a handout follows no link from a formula"
    return _function_spacing(_XMLNS.sub("", mathml, count=1)), ""


def _unbalanced_braces(latex: str) -> str:
    """Why the braces of ``latex`` do not pair up (an escaped ``\\{`` is text), or "" when they do."""
    depth = 0
    for match in re.finditer(r"\\\\|\\[{}]|[{}]", latex):
        token = match.group()
        if len(token) == 2:  # \\, \{ or \}: text, not grouping
            continue
        depth += 1 if token == "{" else -1
        if depth < 0:
            return f"unbalanced braces: a '}}' at character {match.start()} closes no '{{'"
    return f"unbalanced braces: {depth} '{{' never closed" if depth else ""


# A function name (\\log, \\exp, \\operatorname{softmax}, \\max) and the tag right after it.
_FUNCTION_NAME = re.compile(r"<(mi|mo)((?: [a-z]+=\"[^\"]*\")*)>([A-Za-z]{2,})</\1>(?=(<[a-z]+)?)")


def _function_spacing(mathml: str) -> str:
    """TeX's spacing around function names, which MathML Core leaves to the author.

    TeX puts a thin space between ``\\log`` and ``p`` but none before an opening parenthesis;
    Chromium draws a multi-letter ``<mi>`` with no space and a multi-letter ``<mo>`` with thick
    spaces on both sides ("softmax (z)").
    """

    def spaced(match: re.Match) -> str:
        tag, attrs, name, following = match.group(1), match.group(2), match.group(3), match.group(4)
        after = "0em" if following in (None, "<mo") else "0.1667em"
        if tag == "mo":
            attrs = re.sub(r' (lspace|rspace)="[^"]*"', "", attrs)
            return f'<mo{attrs} lspace="0em" rspace="{after}">{name}</mo>'
        space = "" if after == "0em" else '<mspace width="0.1667em"></mspace>'
        return f"<mi{attrs}>{name}</mi>{space}"

    return _FUNCTION_NAME.sub(spaced, mathml)


class MathMLRenderer(IPythonRenderer):
    """nbconvert's Markdown renderer with math written as MathML and no heading anchors.

    Math problems are collected in ``problems`` (location, expression, reason); ``strict`` raises
    on the first one instead.
    """

    def __init__(self, where: str, *, strict: bool = True, **kwargs):
        kwargs.setdefault("escape", False)
        kwargs.setdefault("exclude_anchor_links", True)
        super().__init__(**kwargs)
        self.where = where
        self.strict = strict
        self.problems: list[tuple[str, str, str]] = []
        self.expressions: list[str] = []

    def _math(self, latex: str, display: bool) -> str:
        self.expressions.append(latex)
        try:
            return latex_to_mathml(latex, display=display)
        except MathError as exc:
            problem = (self.where, latex, str(exc))
            if self.strict:
                raise HandoutError(_describe(problem)) from None
            self.problems.append(problem)
            return f"<code>{html.escape(latex)}</code>"

    def _html_embed_images(self, html_text: str) -> str:
        """Embed each ``<img>`` of a raw HTML block and leave the rest byte for byte.

        nbconvert re-serialises the whole block through BeautifulSoup, which closes a
        ``<details>`` whose Markdown body follows a blank line before that body is reached
        (Markdown ends an HTML block at a blank line), and the answer lands outside it.
        """
        return _IMG_TAG.sub(lambda match: super(MathMLRenderer, self)._html_embed_images(match.group()), html_text)

    def block_math(self, body: str) -> str:
        """``$$...$$`` and ``\\[...\\]`` as display MathML."""
        return self._math(body, True)

    def inline_math(self, body: str) -> str:
        """``$...$`` and ``\\(...\\)`` as inline MathML."""
        return self._math(body, False)

    def latex_environment(self, name: str, body: str) -> str:
        """A bare ``\\begin{env}...\\end{env}`` as display MathML."""
        return self._math(f"\\begin{{{name}}}{body}\\end{{{name}}}", True)

    def heading(self, text: str, level: int, **attrs) -> str:
        """A plain heading; ids and the table of contents are added once the page is complete."""
        return f"<h{level}>{text}</h{level}>\n"

    def image(self, text: str, url: str, title: str | None = None) -> str:
        """Images on the network become their alt text, so opening the handout fetches nothing."""
        if re.match(r"(?i)^(https?:)?//", url):
            return (
                f'<span class="external-image" data-where="{html.escape(self.where)}" '
                f'data-url="{html.escape(url)}">{html.escape(text or url)}</span>'
            )
        rendered = super().image(text, url, title)
        if self.strict and not rendered.startswith('<img src="data:'):
            raise HandoutError(
                f"{self.where}: image {url!r} was not found next to the notebook nor attached to the cell; "
                "attach it to the cell or draw it with matplotlib"
            )
        return rendered


RAW_LATEX = "raw LaTeX outside math"


def _describe(problem: tuple[str, str, str]) -> str:
    where, latex, reason = problem
    if reason.startswith(RAW_LATEX):
        return f"{where}: {reason}: {latex!r}"
    return f"{where}: LaTeX ${latex.strip()}$ does not convert to MathML: {reason}"


def raw_latex(fragment: str, source: str) -> list[str]:
    """LaTeX left as text in rendered Markdown: a control word or an unmatched ``$`` outside code and math.

    A dollar the author escaped (``\\$5``) is text on purpose and is not counted.
    """
    soup = BeautifulSoup(fragment, "html.parser")
    for tag in soup.find_all(["pre", "code", "math"]):
        tag.decompose()
    text = soup.get_text(" ")
    found = [f"...{text[max(m.start() - 30, 0):m.end() + 30].strip()}..." for m in _LEFTOVER_COMMAND.finditer(text)]
    if text.count("$") > source.count("\\$"):
        at = text.index("$")
        found.append(f"...{text[max(at - 30, 0):at + 30].strip()}...")
    return found


# Rendered Markdown by (source, where, strict, options): the full and the reading handout, and the math check
# before them, render the same cells; a failing render raises and is not stored. Callers only read the renderer.
_RENDERED: dict[tuple, tuple[str, "MathMLRenderer"]] = {}
_RENDERED_MAX = 4096


def markdown_to_html(source: str, where: str, *, strict: bool = True, **renderer_options) -> tuple[str, MathMLRenderer]:
    """Render Markdown with MathML math, once per process; return the HTML and the renderer (its expressions and problems).

    Besides formulas that do not convert, a problem is LaTeX that was never recognised as math:
    a command typed outside ``$...$`` or a stray ``$`` would show as raw text in the handout.
    """
    key = (source, where, strict, json.dumps(renderer_options, sort_keys=True, default=str))
    if key not in _RENDERED:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        renderer = MathMLRenderer(where, strict=strict, **renderer_options)
        fragment = MarkdownWithMath(renderer=renderer).render(source)
        for snippet in raw_latex(fragment, source):
            problem = (where, snippet, f"{RAW_LATEX} (a command typed without $...$, or an unmatched $; escape a literal dollar as \\$)")
            if strict:
                raise HandoutError(_describe(problem))
            renderer.problems.append(problem)
        _RENDERED[key] = fragment, renderer
    return _RENDERED[key]


def markdown_sources(nb: nbformat.NotebookNode) -> list[tuple[int, str, str]]:
    """Every Markdown text of a notebook: (cell index, 'markdown cell' or 'output N', text)."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            found.append((index, "markdown cell", cell.source))
        for number, output in enumerate(cell.get("outputs", [])):
            text = output.get("data", {}).get("text/markdown")
            if text is not None:
                found.append((index, f"output {number}", text))
    return found


def math_problems(nb: nbformat.NotebookNode, name: str) -> list[str]:
    """Every LaTeX expression of the notebook's Markdown that does not convert, with its cell."""
    problems = []
    for index, what, text in markdown_sources(nb):
        _, renderer = markdown_to_html(text, f"{name}: cell {index} ({what})", strict=False)
        problems += [_describe(p) for p in renderer.problems]
    return problems


def math_expressions(nb: nbformat.NotebookNode) -> list[str]:
    """Every LaTeX expression in the notebook's Markdown cells and Markdown outputs, in order."""
    found = []
    for _, _, text in markdown_sources(nb):
        found += markdown_to_html(text, "", strict=False)[1].expressions
    return found
