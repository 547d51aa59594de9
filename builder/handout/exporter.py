"""nbconvert's HTML exporter turned handout writer: one executed notebook in, a full and a reading page out."""

import base64
import copy
import html
import re
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jinja2 import pass_context
from nbconvert import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, TagRemovePreprocessor

from ..cells import HIDDEN_TAG
from ..student import BEGIN, END
from .colour import accessible_css
from .errors import HandoutError
from .figures import attach_captions
from .mathml import markdown_to_html, math_problems
from .page import CSP, Provenance, finish_page, strip_active_content
from .words import RUN_LABELS, furniture



def provenance_openings(language: str) -> tuple[str, ...]:
    """How the header region opens its provenance line (the messages catalog's ``provenance``), in English and ``language``."""
    from ..translation.messages import reader_message

    return tuple({reader_message("provenance", lang).split(":", 1)[0] + ":" for lang in ("en", language)})

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "handout"
VARIANTS = ("full", "reading")
SUFFIX = {"full": ".html", "reading": ".reading.html"}
REMOVE_CELL_TAGS = ("remove-cell",)
REMOVE_INPUT_TAGS = ("remove-input",)
REMOVE_OUTPUT_TAGS = ("remove-output",)
MIN_TEXT_PT = 9  # the smallest text a figure may show, in CSS points at its shown width
CODE_BACKGROUND = "#F5F7FA"  # --code-bg in handout.css: syntax colours must reach 4.5:1 on it


def css_string(text: str) -> str:
    """``text`` as the inside of a double-quoted CSS string (the print header's module title)."""
    return "".join(ch if ch.isalnum() or ch in " .,:;·-–—()«»'" else f"\\{ord(ch):06x}" for ch in str(text))


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
        width = meta.get(mime, {}).get("width")
        size = f' width="{int(width)}"' if isinstance(width, (int, float)) and width > 0 else ""
        note = meta.get("handout", {})
        caption = ""
        if note.get("caption"):
            caption = f"<figcaption>{markdown_to_html(note['caption'], note['where'])[0]}</figcaption>"
        return (
            f'<figure class="handout-figure jp-OutputArea-output">'
            f'<img src="data:{mime};base64,{payload}"{size} alt="{html.escape(alt, quote=True)}">{caption}</figure>'
        )

    def from_notebook_node(self, nb, resources=None, **kw):
        """nbconvert's HTML export without its BeautifulSoup pass over the whole page.

        ``HTMLExporter.from_notebook_node`` parses the finished page once more to add alt text and
        focusable cells; ``finish_page`` parses it anyway, so it does those two things on its own parse.
        """
        lexer = nb.metadata.get("language_info", {}).get("pygments_lexer", nb.metadata.get("language_info", {}).get("name"))
        self.register_filter("highlight_code", self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    def default_filters(self):
        """The exporter's filters plus the handout's own."""
        yield from super().default_filters()
        yield ("markdown2html", self.markdown2html)
        yield ("handout_figure", self.figure)
        yield ("handout_html", strip_active_content)
        yield ("code_colours", lambda css: accessible_css(css, CODE_BACKGROUND))
        yield ("css_string", css_string)



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
    small_text: tuple[str, ...] = ()  # "cell N: 7.5 pt" for each figure whose smallest text shows under MIN_TEXT_PT

    def summary(self) -> str:
        """Size, formulas, figures, figures with small text, and export time, for the command's report."""
        small = f", {len(self.small_text)} with text under {MIN_TEXT_PT} pt as shown ({'; '.join(self.small_text)})" if self.small_text else ""
        return f"{self.size / 1024:.1f} KiB, {self.math} <math>, {self.figures} figure(s){small}, exported in {self.seconds:.2f} s"

    def __str__(self) -> str:
        return f"{self.path.name}: {self.summary()}"


# The course's setup cells open with "# Setup N of M" (or "# @title Setup N of M"): their output is set-up chatter.
SETUP_CELL = re.compile(r"#\s*(?:@title\s+)?Setup \d+ of \d+\b")
HEADER_REGION = "<!-- builder:begin header -->"


def _without_solution_markers(source: str) -> str:
    """A code cell's source without the ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines (the code between stays)."""
    return "\n".join(line for line in source.split("\n") if line.strip() not in (BEGIN, END))


def _starts_with_label(text: str, labels: tuple[str, ...]) -> bool:
    return text.lstrip().lstrip("*").lstrip().startswith(labels)


def for_the_page(nb: nbformat.NotebookNode, variant: str, language: str) -> None:
    """Shape the notebook for a handout (in place): no solution markers, the provenance only in the page header, and,
    in a reading handout, nothing that tells a reader how to run code (run-instruction paragraphs, set-up chatter and
    what hidden machinery cells print, a prediction's verdict)."""
    labels = RUN_LABELS.get(language, ())
    for cell in nb.cells:
        if cell.cell_type == "markdown" and HEADER_REGION in cell.source:  # the page header states the provenance
            openings = provenance_openings(language)
            cell.source = "\n".join(line for line in cell.source.split("\n") if not line.startswith(openings))
        elif cell.cell_type == "code":
            cell.source = _without_solution_markers(cell.source)
        if variant != "reading":
            continue
        if cell.cell_type == "markdown":
            kept = [part for part in re.split(r"\n\s*\n", cell.source) if not _starts_with_label(part, labels)]
            cell.source = "\n\n".join(kept)
        elif SETUP_CELL.match(cell.source.lstrip()):
            cell.outputs = []
        elif HIDDEN_TAG in cell.get("metadata", {}).get("tags", []):  # machinery: its printed lines are chatter, its figures stay
            cell.outputs = [out for out in cell.get("outputs", []) if out.get("output_type") != "stream"]
        else:
            cell.outputs = [out for out in cell.get("outputs", []) if not _starts_with_label(_output_text(out), labels)]


def _output_text(output) -> str:
    """The text of a stream or text/plain output ("" for others)."""
    text = output.get("text") if output.get("output_type") == "stream" else output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else str(text or "")


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
    for_the_page(nb, variant, prov.language)
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
            "language": prov.language,
            "words": furniture(prov.language),
            "hidden_tag": HIDDEN_TAG,
            "csp": CSP,
        },
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return finish_page(body, name, furniture(prov.language))


def small_text(nb: nbformat.NotebookNode) -> tuple[str, ...]:
    """Figures whose smallest text, as show_figure measured it at the shown width, is under ``MIN_TEXT_PT``."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            size = output.get("metadata", {}).get("image/png", {}).get("smallest_text_pt")
            if isinstance(size, (int, float)) and 0 < size < MIN_TEXT_PT:
                found.append(f"cell {index}: {size:g} pt")
    return tuple(found)


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
        written.append(Handout(name, variant, target, target.stat().st_size, math, figures, seconds, small_text(nb)))
    return written
