"""The finished page: provenance header facts, heading ids and table of contents, and the self-containment audit."""

import copy
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup, CData, Comment, Declaration, NavigableString, ProcessingInstruction, Tag

from .. import __version__
from .errors import HandoutError
from .words import BARE_ANSWER, furniture

TOC_LEVELS = ("h1", "h2", "h3")
# Each page's own second wall, should anything slip past the audit: nothing fetched but images inside the page,
# no script at all, styles only from the page itself (its <style> elements and style attributes).
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
PARSER = "html5lib"  # the audit reads a page as the browser's HTML5 parser does (comments, CDATA, foreign content)
_CSS_URL = re.compile(r"url\(\s*['\"]?(?!\s*data:|\s*#)([^'\")]*)", re.IGNORECASE)


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
    language: str = "en"


def source_commit(root: Path) -> str:
    """``git rev-parse HEAD`` of the checkout, marked when the work tree has changes; 'unknown' outside git."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} (with uncommitted changes)" if dirty else head


def provenance(course, nb) -> Provenance:
    """The header facts of one course notebook (a ``config.Course`` and one of its ``Notebook``s)."""
    return Provenance(nb.title, source_commit(course.root), __version__, f"references/{nb.reference}.json", nb.reference_sha256,
                      nb.language)


def _slug(text: str) -> str:
    """A heading's text as an HTML id."""
    slug = re.sub(r"[^\w]+", "-", text.lower()).strip("-")
    return slug or "section"


def finish_page(page: str, name: str, words: dict[str, str] | None = None) -> tuple[str, int, int]:
    """Add heading ids and the table of contents, number the answers, check network images, and audit the page.

    Returns the final HTML, its number of ``<math>`` elements and its number of figures.
    HandoutError when the page would fetch anything (script, stylesheet, font, image or frame
    from a URL).
    """
    aside = CodeAside(page)
    soup = BeautifulSoup(aside.page, PARSER)
    focusable_cells(soup)
    main = soup.find("main")
    if main is None:
        raise HandoutError(f"{name}: the page has no <main> element to finish")
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
        if heading.name != "h1":  # the page's title: the contents list what lies under it
            entries.append(heading)
    toc = soup.find("nav", id="toc")
    if toc is not None:
        toc.append(_toc_list(soup, entries))
    words = words or furniture("en")
    gather_answers(soup, main, words)
    keep_short_code_whole(main, aside)
    for span in soup.select("span.external-image"):
        if span.find_parent("a") is None:
            raise HandoutError(
                f"{span['data-where']}: image {span['data-url']} lives on the network; "
                "attach it to the notebook or draw it with matplotlib"
            )
        del span["data-url"], span["data-where"]
    drop_markup_declarations(soup, aside.mark)
    written = str(soup)
    # What is written is what was audited: the serialization is parsed again, as a browser would, and audited too.
    problems = audit(soup) or audit(BeautifulSoup(written, PARSER))
    if problems:
        raise HandoutError(f"{name}: the handout would not be self-contained:\n  " + "\n  ".join(problems))
    return aside.restore(written), len(soup.find_all("math")), len(soup.select("figure.handout-figure"))


def drop_markup_declarations(soup: BeautifulSoup, keep: str) -> None:
    """Remove comments (but the set-aside code's), CDATA sections and processing instructions: a reader sees none of them."""
    for node in soup.find_all(string=lambda s: isinstance(s, (Comment, CData, ProcessingInstruction, Declaration))):
        if not (isinstance(node, Comment) and node.startswith(keep)):
            node.extract()


# A highlighted code block's inside as Pygments writes it: spans (with a class, or the empty first one) around
# escaped text. Such markup can neither fetch nor run anything, and it is most of a full handout's tags.
_HIGHLIGHTED = re.compile(r'(<div class=" ?highlight[^"]*"><pre>)(.*?)(</pre>)', re.DOTALL)
_INERT = re.compile(r'(?:[^<]|<span(?: class="[\w -]*")?>|</span>)*', re.DOTALL)
_ANY_TAG = re.compile(r"<[^>]*>")


class CodeAside:
    """A page with each inert highlighted block's markup swapped for a numbered comment, so the page parses fast.

    ``finish_page`` parses and audits the rest, then ``restore`` puts the markup back byte for byte.
    """

    def __init__(self, page: str):
        self.mark = f"handout-code-{secrets.token_hex(8)}-"
        self.blocks: list[str] = []
        self.page = _HIGHLIGHTED.sub(self._set_aside, page)

    def _set_aside(self, match: re.Match) -> str:
        if not _INERT.fullmatch(match.group(2)):
            return match.group()  # anything else is parsed and audited as usual
        self.blocks.append(match.group(2))
        return f"{match.group(1)}<!--{self.mark}{len(self.blocks) - 1}-->{match.group(3)}"

    def text(self, tag) -> str:
        """``tag.get_text()`` as it would read with the set-aside code in place."""
        parts = []
        for piece in tag.descendants:
            if isinstance(piece, Comment) and piece.startswith(self.mark):
                parts.append(_ANY_TAG.sub("", self.blocks[int(piece[len(self.mark):])]))
            elif isinstance(piece, str) and not isinstance(piece, Comment):
                parts.append(piece)
        return "".join(parts)

    def restore(self, html: str) -> str:
        """``html`` with every numbered comment replaced by the markup it stands for."""
        return re.sub(f"<!--{self.mark}(\\d+)-->", lambda m: self.blocks[int(m.group(1))], html)


def focusable_cells(soup: BeautifulSoup) -> None:
    """What nbconvert's HTML exporter adds on a parse of its own: alt text on every image, and focusable cells."""
    for image in soup.select("img:not([alt])"):
        image["alt"] = "No description has been provided for this image"
    for cell in soup.select(".jp-Notebook div.jp-Cell-inputWrapper, .jp-Notebook div.jp-OutputArea-output"):
        cell["tabindex"] = "0"


SHORT_CODE_LINES = 30  # a code block this short prints on one page, never split across two


def keep_short_code_whole(main, aside: CodeAside) -> None:
    """Mark code inputs of at most ``SHORT_CODE_LINES`` lines, which print unbroken (``.keep-whole`` in handout.css)."""
    for block in main.select(".jp-InputArea-editor"):
        if aside.text(block).strip().count("\n") < SHORT_CODE_LINES:
            block["class"] = [*block.get("class", []), "keep-whole"]


def _question_number(details, section, counters: dict[int, int]) -> int:
    """The number of the question a disclosure answers: its list item's number, else its place in its section."""
    item = details.find_parent("li")
    if item is not None and item.parent is not None and item.parent.name == "ol":
        start = int(item.parent.get("start", 1) or 1)
        return start + item.parent.find_all("li", recursive=False).index(item)
    counters[id(section)] = counters.get(id(section), 0) + 1
    return counters[id(section)]


def gather_answers(soup: BeautifulSoup, main, words: dict[str, str]) -> None:
    """Name each answer's question in its summary, and copy the answers to the end of the page for print.

    On screen an answer stays in its closed ``<details>``. Paper has no disclosure: a closed one
    prints its summary only, an open one gives the answer away next to its question. So print
    shows the summaries where the questions are, and the answers once more, in order, after
    the lesson (``.print-answers``, hidden on screen).
    """
    counters: dict[int, int] = {}
    answers = []
    for details in main.find_all("details"):
        section = details.find_previous("h2")
        summary = details.find("summary", recursive=False)
        if summary is None:
            summary = soup.new_tag("summary")
            details.insert(0, summary)
        if summary.get_text(" ", strip=True).lower().rstrip(".:") in BARE_ANSWER or not summary.get_text(strip=True):
            summary.clear()
            summary.append(words["answer"].format(number=_question_number(details, section, counters)))
        summary["data-print-note"] = words["answer_at_end"].format(title=words["answers"])
        body = [copy.copy(child) for child in details.contents if child is not summary]
        answers.append((section, summary.get_text(" ", strip=True), body))
    if not answers:
        return
    gathered = soup.new_tag("section", attrs={"class": "print-answers", "aria-labelledby": "print-answers-title"})
    title = soup.new_tag("h2", id="print-answers-title")
    title.string = words["answers"]
    gathered.append(title)
    last = None
    for section, label, body in answers:
        if section is not last and section is not None:
            part = soup.new_tag("h3")
            for child in section.contents:
                part.append(copy.copy(child))
            gathered.append(part)
        last = section
        entry = soup.new_tag("div", attrs={"class": "print-answer"})
        heading = soup.new_tag("p", attrs={"class": "print-answer-label"})
        heading.string = label
        entry.append(heading)
        for child in body:
            if isinstance(child, Tag):
                for tag in [child, *child.find_all(id=True)]:
                    tag.attrs.pop("id", None)  # the copy must not take its original's id
            entry.append(child)
        gathered.append(entry)
    main.append(gathered)


def _toc_list(soup: BeautifulSoup, headings: list) -> Tag:
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


# Elements that run a script, embed another document or change how the page loads.
ACTIVE_ELEMENTS = ("script", "link", "iframe", "frame", "frameset", "object", "embed", "applet", "base",
                   "portal", "fencedframe")
# Attributes that hold a URL the browser fetches or navigates to.
URL_ATTRIBUTES = ("src", "srcset", "poster", "data", "background", "href", "xlink:href", "codebase",
                  "longdesc", "lowsrc", "dynsrc", "manifest", "icon", "archive", "formaction", "action", "ping")
# Attributes that make the browser send something by themselves, whatever their value.
SENDING_ATTRIBUTES = ("action", "formaction", "ping")
SVG_ANIMATIONS = ("animate", "set", "animatemotion", "animatetransform", "animatecolor")
SCRIPT_SCHEMES = ("javascript:", "vbscript:", "livescript:")
LINKS = ("a", "area")  # elements whose href is a link a reader may follow, not a resource the page loads
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})[ \t\n\r\f]?|\\(.)", re.DOTALL)
_CSS_STRING = re.compile(r"""(['"])(.*?)(?<!\\)\1""", re.DOTALL)
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_IMAGE_SET = re.compile(r"image-set\(([^()]*(?:\([^()]*\)[^()]*)*)\)", re.IGNORECASE)


def url_as_browsers_read_it(value: str) -> str:
    """A URL attribute as Chromium parses it: tabs and newlines anywhere removed, controls and spaces trimmed, lower case."""
    return re.sub(r"[\t\n\r]", "", str(value)).strip(_C0_AND_SPACE).lower()


def css_as_browsers_read_it(css: str) -> str:
    """CSS with comments removed and escapes decoded (``\\75 rl(`` is ``url(``), in lower case."""
    def unescape(match: re.Match) -> str:
        if match.group(1):
            code = int(match.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF else "\ufffd"
        return match.group(2)

    return _CSS_ESCAPE.sub(unescape, _CSS_COMMENT.sub("", css)).lower()


def css_problems(css: str, where: str) -> list[str]:
    """What a stylesheet or ``style`` attribute would fetch: ``@import``, ``url()`` and ``image-set()`` outside the page."""
    text = css_as_browsers_read_it(css)
    problems = [f"CSS @import in {where}"] if "@import" in text else []
    for url in _CSS_URL.findall(text):
        problems.append(f"CSS url({url.strip()[:100]}) in {where} loads from outside the page")
    for inside in _IMAGE_SET.findall(text):
        for _, url in _CSS_STRING.findall(inside):
            if not url.strip().startswith(("data:", "#")):
                problems.append(f"CSS image-set('{url[:100]}') in {where} loads from outside the page")
    for active in ("expression(", "-moz-binding", "behavior:"):
        if active in text:
            problems.append(f"CSS {active} in {where} runs a script")
    return problems


def _attribute_problems(tag) -> list[str]:
    """The URL, event-handler, CSS ``url()`` and animation attributes of one element that fetch or run something.

    Names compare in lower case: the HTML5 parser keeps SVG's own spelling (``attributeName``, ``feImage``).
    """
    problems = []
    element = tag.name.lower()
    for attr, value in tag.attrs.items():
        name = str(attr).lower()
        text = " ".join(value) if isinstance(value, list) else str(value)
        url = url_as_browsers_read_it(text)
        if name.startswith("on"):
            problems.append(f"<{tag.name} {attr}> is an event handler: it runs a script")
        elif url.startswith(SCRIPT_SCHEMES) or (name in ("values", "to", "from", "by") and SCRIPT_SCHEMES[0] in url.replace(" ", "")):
            problems.append(f"<{tag.name} {attr}={text[:100]!r}> runs a script")
        elif name in SENDING_ATTRIBUTES:
            problems.append(f"<{tag.name} {attr}={text[:100]!r}> sends a request to {text[:100] or 'the page'}")
        elif name in URL_ATTRIBUTES and not url.startswith("data:") and not (name == "href" and (element in LINKS or url.startswith("#"))):
            problems.append(f"<{tag.name} {attr}={text[:100]!r}> loads from outside the page")
        elif name == "href" and element in LINKS and url.startswith("data:"):
            problems.append(f"<{tag.name} href={text[:100]!r}> opens a document made inside the link")
        elif name == "style":
            problems += css_problems(text, f"the style of <{tag.name}>")
        elif not (name == "href" and element in LINKS):  # SVG presentation attributes (fill, mask, marker-end, cursor...) take url()
            problems += css_problems(text, f"the {attr} of <{tag.name}>")
    animated = next((str(v) for k, v in tag.attrs.items() if str(k).lower() == "attributename"), "")
    if element in SVG_ANIMATIONS and animated.lower().strip() in ("href", "xlink:href"):
        problems.append(f"<{tag.name} attributeName={animated!r}> animates a link target")
    return problems


def raw_text(tag) -> str:
    """Every string inside ``tag``, whatever its kind (``get_text`` skips a style's text under some tree builders)."""
    return "".join(str(piece) for piece in tag.descendants if isinstance(piece, NavigableString) and not isinstance(piece, Comment))


def own_csp(soup: BeautifulSoup):
    """The page's own Content-Security-Policy: the first <meta http-equiv> of <head>, holding exactly ``CSP``; else None."""
    first = soup.head.find("meta", attrs={"http-equiv": True}, recursive=False) if soup.head else None
    return first if (first is not None and str(first["http-equiv"]).lower() == "content-security-policy"
                     and first.get("content") == CSP) else None


def audit(soup: BeautifulSoup) -> list[str]:
    """Everything in the page that would run a script, fetch from outside the file, or send a request."""
    problems = []
    for tag in soup.find_all(ACTIVE_ELEMENTS):
        problems.append(f"<{tag.name}> element: {str(tag)[:120]}")
    own_policy = own_csp(soup)
    for tag in soup.find_all("meta"):
        if tag.has_attr("http-equiv") and tag is not own_policy:
            problems.append(f"<meta http-equiv={tag['http-equiv']!r}>: it can reload, redirect or change the page's rules")
    for tag in soup.find_all(True):
        problems += _attribute_problems(tag)
        if tag.name.lower() == "style":
            problems += css_problems(raw_text(tag), "a <style> element")
    return problems
