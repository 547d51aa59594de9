"""The finished page: provenance header facts, heading ids and table of contents, and the self-containment audit."""

import copy
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup

from .. import __version__
from .errors import HandoutError

TOC_LEVELS = ("h1", "h2", "h3")
_CSS_URL = re.compile(r"url\(\s*['\"]?(?!data:|#)([^'\")]*)", re.IGNORECASE)


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


def provenance(course, nb) -> Provenance:
    """The header facts of one course notebook (a ``config.Course`` and one of its ``Notebook``s)."""
    return Provenance(nb.title, source_commit(course.root), __version__, f"references/{nb.reference}.json", nb.reference_sha256)


def _slug(text: str) -> str:
    """A heading's text as an HTML id."""
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
