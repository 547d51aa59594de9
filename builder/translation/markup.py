"""What a translation could load, link or run, found by parsers and not by patterns.

``items`` parses a unit with mistune (the markdown parser the handouts use) and the HTML it holds
with the standard library's ``html.parser``: every link, bare URL and reference definition, every
image (its URL and title), every HTML tag and comment. ``code_lines`` finds each line jupytext
would read back as something other than the comment or markdown text it was written as: a cell
marker (``# %%``, ``%%``) or an IPython magic (``%pip``, ``!cmd``), by jupytext's own tests.
"""

import functools
import re
from html.parser import HTMLParser

import mistune
from jupytext.cell_reader import DoublePercentScriptCellReader
from jupytext.magics import is_magic

_PARSER = mistune.create_markdown(renderer=None, plugins=["url"])
_MARKERS = DoublePercentScriptCellReader({"extension": ".py"})
_HTML_TOKENS = ("inline_html", "block_html")
_TAG_START = re.compile(r"<[A-Za-z!/?]")
_DEPTH = 4  # markdown inside HTML inside markdown ...: deeper than any course text, shallow enough to end


@functools.lru_cache(maxsize=8192)  # check asks for each unit's items for its English and its translation
def items(text: str) -> tuple[tuple[str, str], ...]:
    """(kind, item) for each link (``link``), image (``image``) and HTML tag or comment (``tag``) of markdown ``text``, in order."""
    return tuple(_markdown_items(text, _DEPTH))


def _markdown_items(text: str, depth: int) -> list[tuple[str, str]]:
    """``items`` of one markdown text, HTML inside it parsed down to ``depth`` levels."""
    tokens, state = _PARSER.parse(text)
    if isinstance(tokens, str):  # renderer=None gives the token tree, never rendered text
        raise TypeError("the markdown parser rendered text instead of giving its tokens")
    found = _token_items(tokens, depth)
    for definition in state.env.get("ref_links", {}).values():  # "[x]: url", used or not
        found.append(("link", _with_title(definition.get("url", ""), definition.get("title"))))
    return found


def _token_items(tokens: list[dict], depth: int) -> list[tuple[str, str]]:
    """The items of a mistune token tree, depth first."""
    found = []
    for token in tokens:
        kind, attrs = token["type"], token.get("attrs") or {}
        if kind == "image":
            found.append(("image", _with_title(attrs.get("url", ""), attrs.get("title"))))
        elif kind == "link":
            found.append(("link", _with_title(attrs.get("url", ""), attrs.get("title"))))
        elif kind in _HTML_TOKENS:
            found += _html_items(token.get("raw", ""), depth)
        found += _token_items(token.get("children") or [], depth)
    return found


def _with_title(url: str, title: str | None) -> str:
    """A link's or image's target as one item: its URL, and its title when it has one."""
    return f'{url} "{title}"' if title else url


class _Tags(HTMLParser):
    """Every tag, comment and declaration of an HTML fragment; its text is kept to be read as markdown again."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.found.append(("tag", "<" + " ".join([tag] + [f'{k}="{v}"' if v is not None else k for k, v in attrs]) + ">"))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        self.found.append(("tag", f"</{tag}>"))

    def handle_comment(self, data):
        self.found.append(("tag", f"<!--{data}-->"))

    def handle_decl(self, decl):
        self.found.append(("tag", f"<!{decl}>"))

    def unknown_decl(self, data):
        self.found.append(("tag", f"<![{data}]>"))

    def handle_pi(self, data):
        self.found.append(("tag", f"<?{data}>"))

    def handle_data(self, data):
        self.text.append(data)


def _html_items(html: str, depth: int) -> list[tuple[str, str]]:
    """The tags of an HTML token, then the links, images and tags of the markdown its text may hold."""
    parser = _Tags()
    parser.feed(html)
    parser.close()
    text = "".join(parser.text)
    if _TAG_START.search(text):  # a tag the parser could not finish ("<img" cut by the end): refused all the same
        parser.found.append(("tag", " ".join(text.split())))
    if depth > 0 and text.strip():
        parser.found += _markdown_items(text, depth - 1)
    return parser.found


def code_lines(text: str, *, commented: bool = True) -> list[str]:
    """Lines of ``text`` that jupytext would read back as a cell marker or a magic once written as comment lines (``# line``)."""
    found = []
    for line in text.split("\n"):
        written = f"# {line}" if commented else line
        if _MARKERS.start_code_re.match(written) or _MARKERS.alternative_start_code_re.match(written):
            found.append(f"{line.strip()!r} would start a new cell")
        elif is_magic(line, "python", explicitly_code=True) or is_magic(written, "python", explicitly_code=True):
            found.append(f"{line.strip()!r} would become an IPython magic or shell command")
    return found
