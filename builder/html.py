"""Offline HTML handouts: executed notebooks exported as self-contained pages with MathML math.

A handout loads nothing from the network and runs no script. Math is converted from LaTeX to
MathML here, at export time, so Chromium draws it natively; an expression that does not convert
stops the export with the notebook, the cell and the expression. Figures are embedded as data
URIs and carry their caption as alt text. Every notebook gets two pages: the full handout with
the code, and a reading handout without code inputs.
"""

import argparse
import base64
import copy
import html
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from bs4 import BeautifulSoup
from jinja2 import pass_context
from latex2mathml.converter import convert as latex2mathml_convert
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, TagRemovePreprocessor

from . import __version__, execute
from .notebooks import reference_sha
from .config import Course, Notebook

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "handout"
VARIANTS = ("full", "reading")
SUFFIX = {"full": ".html", "reading": ".reading.html"}
REMOVE_CELL_TAGS = ("remove-cell",)
REMOVE_INPUT_TAGS = ("remove-input",)
REMOVE_OUTPUT_TAGS = ("remove-output",)
TOC_LEVELS = ("h1", "h2", "h3")
FIGURE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")

# A LaTeX control word that survived conversion: latex2mathml passes unknown commands through as text.
_LEFTOVER_COMMAND = re.compile(r"\\[A-Za-z]+")
_TAG = re.compile(r"<[^>]*>")
_XMLNS = re.compile(r'\s+xmlns="[^"]*"')
_CSS_URL = re.compile(r"url\(\s*['\"]?(?!data:|#)([^'\")]*)", re.IGNORECASE)


class HandoutError(RuntimeError):
    """A notebook that cannot become an offline handout: unconvertible math, a figure without caption, a network resource."""


class MathError(ValueError):
    """One LaTeX expression that latex2mathml cannot turn into MathML."""


# ---------------------------------------------------------------------------------------------
# Math


def latex_to_mathml(latex: str, *, display: bool) -> str:
    """MathML for one LaTeX expression; MathError when latex2mathml fails or leaves a command as text."""
    try:
        mathml = latex2mathml_convert(latex.strip(), display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises many private exception types
        raise MathError(f"latex2mathml failed: {type(exc).__name__} {exc}".strip()) from None
    leftover = _LEFTOVER_COMMAND.findall(html.unescape(_TAG.sub(" ", mathml)))
    if leftover:
        raise MathError(f"unknown command(s) {', '.join(sorted(set(leftover)))} would show as raw text")
    return _function_spacing(_XMLNS.sub("", mathml, count=1))


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


def markdown_to_html(source: str, where: str, *, strict: bool = True, **renderer_options) -> tuple[str, MathMLRenderer]:
    """Render Markdown with MathML math; return the HTML and the renderer (its expressions and problems).

    Besides formulas that do not convert, a problem is LaTeX that was never recognised as math:
    a command typed outside ``$...$`` or a stray ``$`` would show as raw text in the handout.
    """
    renderer = MathMLRenderer(where, strict=strict, **renderer_options)
    fragment = MarkdownWithMath(renderer=renderer).render(source)
    for snippet in raw_latex(fragment, source):
        problem = (where, snippet, f"{RAW_LATEX} (a command typed without $...$, or an unmatched $; escape a literal dollar as \\$)")
        if strict:
            raise HandoutError(_describe(problem))
        renderer.problems.append(problem)
    return fragment, renderer


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


# ---------------------------------------------------------------------------------------------
# Figures


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


# ---------------------------------------------------------------------------------------------
# Export


class HandoutExporter(HTMLExporter):
    """nbconvert's HTML exporter with the handout template, MathML math and captioned figures."""

    def __init__(self, notebook: str, **kwargs):
        super().__init__(
            template_name=TEMPLATE_NAME,
            extra_template_basedirs=[str(TEMPLATES)],
            exclude_input_prompt=True,
            exclude_output_prompt=True,
            embed_images=True,
            **kwargs,
        )
        self.notebook = notebook
        self.register_preprocessor(TagRemovePreprocessor(
            remove_cell_tags=set(REMOVE_CELL_TAGS),
            remove_input_tags=set(REMOVE_INPUT_TAGS),
            remove_all_outputs_tags=set(REMOVE_OUTPUT_TAGS),
        ), enabled=True)
        self.register_preprocessor(CSSHTMLHeaderPreprocessor(style="default"), enabled=True)

    @pass_context
    def markdown2html(self, context, source):
        """Markdown to HTML with MathML math; the cell index names the culprit when math fails."""
        cell = context.get("cell", {})
        index = cell.get("metadata", {}).get("handout_index", "?")
        path = context.get("resources", {}).get("metadata", {}).get("path", "")
        where = f"{self.notebook}: cell {index}"
        return markdown_to_html(source, where, attachments=cell.get("attachments", {}), embed_images=True, path=path)[0]

    def figure(self, output, mime: str) -> str:
        """One figure output as ``<figure>``: the embedded image, its alt text and its caption."""
        data = output["data"][mime]
        if mime == "image/svg+xml":
            data = base64.b64encode(data.encode("utf-8")).decode("ascii")
        payload = "".join(data.split())
        meta = output.get("metadata", {})
        alt = meta.get(mime, {}).get("alt", "")
        note = meta.get("handout", {})
        caption = ""
        if note.get("caption"):
            caption = f"<figcaption>{markdown_to_html(note['caption'], note['where'])[0]}</figcaption>"
        return (
            f'<figure class="handout-figure jp-OutputArea-output">'
            f'<img src="data:{mime};base64,{payload}" alt="{html.escape(alt, quote=True)}">{caption}</figure>'
        )

    def default_filters(self):
        """The exporter's filters plus the handout's own."""
        yield from super().default_filters()
        yield ("markdown2html", self.markdown2html)
        yield ("handout_figure", self.figure)
        yield ("handout_html", strip_active_content)


def strip_active_content(fragment: str) -> str:
    """An HTML output without scripts, frames or linked resources (a handout runs and fetches nothing)."""
    soup = BeautifulSoup(fragment, "html.parser")
    for tag in soup.find_all(["script", "link", "iframe", "object", "embed", "base", "meta"]):
        tag.decompose()
    return str(soup)


@dataclass(frozen=True)
class Provenance:
    """What the handout header says about where it came from."""

    title: str
    commit: str
    version: str
    reference: str
    reference_sha256: str


def source_commit(root: Path) -> str:
    """``git rev-parse HEAD`` of the checkout, marked when the work tree has changes; 'unknown' outside git."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} (with uncommitted changes)" if dirty else head


def provenance(course: Course, nb: Notebook) -> Provenance:
    """The header facts of one course notebook."""
    return Provenance(nb.title, source_commit(course.root), __version__, f"references/{nb.reference}.json", reference_sha(nb))


def _slug(text: str) -> str:
    slug = re.sub(r"[^\w]+", "-", text.lower()).strip("-")
    return slug or "section"


def finish_page(page: str, name: str) -> tuple[str, int, int]:
    """Add heading ids and the table of contents, check network images, and audit the page.

    Returns the final HTML, its number of ``<math>`` elements and its number of figures.
    HandoutError when the page would fetch anything (script, stylesheet, font, image or frame
    from a URL).
    """
    soup = BeautifulSoup(page, "html.parser")
    main = soup.find("main")
    used = {tag["id"] for tag in soup.find_all(id=True)}
    entries = []
    for heading in main.find_all(TOC_LEVELS):
        if not heading.get("id"):
            base = _slug(heading.get_text(" ", strip=True))
            candidate, number = base, 2
            while candidate in used:
                candidate, number = f"{base}-{number}", number + 1
            heading["id"] = candidate
            used.add(candidate)
        entries.append(heading)
    toc = soup.find("nav", id="toc")
    if toc is not None:
        toc.append(_toc_list(soup, entries))
    for span in soup.select("span.external-image"):
        if span.find_parent("a") is None:
            raise HandoutError(
                f"{span['data-where']}: image {span['data-url']} lives on the network; "
                "attach it to the notebook or draw it with matplotlib"
            )
        del span["data-url"], span["data-where"]
    problems = audit(soup)
    if problems:
        raise HandoutError(f"{name}: the handout would not be self-contained:\n  " + "\n  ".join(problems))
    return str(soup), len(soup.find_all("math")), len(soup.select("figure.handout-figure"))


def _toc_list(soup: BeautifulSoup, headings: list) -> object:
    """Nested ordered lists of links, one item per heading, nested by heading level."""
    root = soup.new_tag("ol")
    stack = [(min((int(h.name[1]) for h in headings), default=1), root)]
    for heading in headings:
        level = int(heading.name[1])
        while len(stack) > 1 and level < stack[-1][0]:
            stack.pop()
        items = stack[-1][1].find_all("li", recursive=False)
        if level > stack[-1][0] and items:
            sub = soup.new_tag("ol")
            items[-1].append(sub)
            stack.append((level, sub))
        item = soup.new_tag("li")
        link = soup.new_tag("a", href=f"#{heading['id']}")
        for child in heading.contents:
            link.append(copy.copy(child))
        item.append(link)
        stack[-1][1].append(item)
    return root


def audit(soup: BeautifulSoup) -> list[str]:
    """Everything in the page that would run a script or fetch from outside the file."""
    problems = []
    for tag in soup.find_all(["script", "link", "iframe", "object", "embed", "base", "frame", "applet"]):
        problems.append(f"<{tag.name}> element: {str(tag)[:120]}")
    for tag in soup.find_all(True):
        for attr in ("src", "srcset", "poster", "data", "background", "xlink:href"):
            value = tag.get(attr)
            if value and not str(value).startswith("data:"):
                problems.append(f"<{tag.name} {attr}={str(value)[:100]!r}> loads from outside the page")
        if tag.name == "use" and tag.get("href", "#").split("#")[0]:
            problems.append(f"<use href={tag['href'][:100]!r}> loads from outside the page")
        if any(a.startswith("on") and a != "open" for a in tag.attrs):  # onclick, onload, ... (not <details open>)
            problems.append(f"<{tag.name}> has an event handler attribute")
        style = tag.get("style", "") if tag.name != "style" else tag.get_text()
        for url in _CSS_URL.findall(style):
            problems.append(f"CSS url({url[:100]}) in <{tag.name}> loads from outside the page")
        if "@import" in style:
            problems.append(f"CSS @import in <{tag.name}>")
        if tag.name == "a" and str(tag.get("href", "")).lower().startswith("javascript:"):
            problems.append("javascript: link")
    return problems


@dataclass(frozen=True)
class Handout:
    """One written handout and what the report says about it."""

    name: str
    variant: str
    path: Path
    size: int
    math: int
    figures: int
    seconds: float

    def summary(self) -> str:
        """Size, formulas, figures and export time, for the command's report."""
        return f"{self.size / 1024:.1f} KiB, {self.math} <math>, {self.figures} figure(s), exported in {self.seconds:.2f} s"

    def __str__(self) -> str:
        return f"{self.path.name}: {self.summary()}"


def render(nb: nbformat.NotebookNode, name: str, prov: Provenance, *, variant: str = "full", path: Path | None = None) -> tuple[str, int, int]:
    """The handout HTML of an executed notebook: (html, number of <math> elements, number of figures).

    ``path`` is the folder that relative image links in Markdown are read from.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    nb = copy.deepcopy(nb)
    problems = math_problems(nb, name)
    if problems:
        raise HandoutError(f"{len(problems)} LaTeX problem(s):\n  " + "\n  ".join(problems))
    for index, cell in enumerate(nb.cells):
        cell.setdefault("metadata", {})["handout_index"] = index
    attach_captions(nb, name)
    exporter = HandoutExporter(name, exclude_input=(variant == "reading"))
    resources = {
        "metadata": {"name": name, "path": str(path or ".")},
        "handout": {
            "title": prov.title,
            "commit": prov.commit,
            "version": prov.version,
            "reference": prov.reference,
            "reference_sha256": prov.reference_sha256,
            "variant": variant,
        },
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return finish_page(body, name)


def export(executed: Path, out_dir: Path, name: str, prov: Provenance, variants: tuple[str, ...] = VARIANTS,
           *, images_from: Path | None = None) -> list[Handout]:
    """Write the handouts of one executed notebook into ``out_dir``; relative images are read from ``images_from``."""
    nb = nbformat.read(executed, as_version=4)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for variant in variants:
        start = time.perf_counter()
        page, math, figures = render(nb, name, prov, variant=variant, path=images_from or executed.parent)
        target = out_dir / f"{name}{SUFFIX[variant]}"
        target.write_text(page, encoding="utf-8")
        seconds = time.perf_counter() - start
        written.append(Handout(name, variant, target, target.stat().st_size, math, figures, seconds))
    return written


# ---------------------------------------------------------------------------------------------
# Command line


def add_options(parser: argparse.ArgumentParser) -> None:
    """Options of ``python -m builder html`` beyond the shared execution options."""
    parser.add_argument("--handouts", type=Path, help="folder for the handouts (default: dist/handouts)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-input-only", action="store_true", help="write only the reading handouts, without code inputs")
    which.add_argument("--full-only", action="store_true", help="write only the full handouts, with code")


def command(course: Course, args: argparse.Namespace, *, execute_first: bool = True) -> int:
    """Execute (or reuse the executed copies of) the chosen notebooks and write their handouts."""
    executed_dir = getattr(args, "out", None) or course.root / "dist" / "executed"
    out_dir = getattr(args, "handouts", None) or course.root / "dist" / "handouts"
    variants = VARIANTS
    if getattr(args, "no_input_only", False):
        variants = ("reading",)
    elif getattr(args, "full_only", False):
        variants = ("full",)
    status = 0
    for nb in course.select(getattr(args, "names", None)):
        problems = math_problems(nbformat.read(nb.ipynb, as_version=4), nb.name)
        if problems:  # fail before spending a kernel run on it
            print(f"error: {len(problems)} LaTeX problem(s):\n  " + "\n  ".join(problems), file=sys.stderr)
            status = 1
            continue
        executed = executed_dir / nb.ipynb.name
        if execute_first or not executed.exists():
            result = execute.run(nb.ipynb, executed_dir, timeout=getattr(args, "timeout", 600))
            budget = getattr(args, "budget", None)
            print(execute.report(result, budget), flush=True)
            if result.error:
                print(f"html: {nb.name} failed to execute; no handout written", file=sys.stderr)
                status = 1
                continue
            if budget is not None and result.seconds > budget:
                status = 1
        try:
            for handout in export(executed, out_dir, nb.name, provenance(course, nb), variants, images_from=nb.ipynb.parent):
                shown = handout.path.relative_to(course.root) if handout.path.is_relative_to(course.root) else handout.path
                print(f"wrote {shown}: {handout.summary()}", flush=True)
        except HandoutError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status
