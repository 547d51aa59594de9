"""The self-containment audit: every payload that could make a handout fetch, send or run something is refused.

Each payload is its own case, written into a Markdown cell (raw HTML passes through Markdown)
or into an HTML output, and ``handout.render`` must stop with a HandoutError that names it.
The first eleven are the ones issue 28 found passing; the rest are other spellings of the same
attacks. ``test_a11y.py`` opens the real handouts in Chromium and counts requests and scripts.
"""

import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from builder import handout

PROVENANCE = handout.Provenance("Audit", "0123abcd", "9.9.9", "references/fixture.json", "f" * 64)
URL = "http://example.invalid/x"

# (case id, raw HTML or Markdown, a phrase the refusal must contain)
PAYLOADS = [
    ("meta-refresh", f'<meta http-equiv="refresh" content="0;url={URL}">', "http-equiv"),
    ("image-set-attribute", f"<div style=\"background-image:image-set('{URL}.png' 1x)\">x</div>", "image-set"),
    ("image-set-style-element", f"<style>div {{ background-image: image-set('{URL}.png' 1x); }}</style>", "image-set"),
    ("javascript-leading-space", '<a href=" javascript:alert(1)">x</a>', "runs a script"),
    ("javascript-tab-inside", '<a href="java\tscript:alert(1)">x</a>', "runs a script"),
    ("svg-animate-href", '<svg><a><animate attributeName="href" values="javascript:alert(1)"/><text y="20">x</text></a></svg>', "animat"),
    ("svg-image-href", f'<svg><image href="{URL}.png" width="10" height="10"/></svg>', "loads from outside"),
    ("form-action", f'<form action="{URL}"><button>go</button></form>', "sends a request"),
    ("a-ping", f'<a href="#top" ping="{URL}">x</a>', "sends a request"),
    ("css-url-attribute", f'<div style="background:url({URL}.png)">x</div>', "url("),
    ("css-import", f'<style>@import "{URL}.css";</style>', "@import"),
    # Other spellings of the same attacks.
    ("javascript-mixed-case", '<a href="JaVaScRiPt:alert(1)">x</a>', "runs a script"),
    ("javascript-entity", '<a href="&#106;avascript&colon;alert(1)">x</a>', "runs a script"),
    ("javascript-control-character", '<a href="\x01javascript:alert(1)">x</a>', "runs a script"),
    ("javascript-newline-inside", '<a href="javas\ncript:alert(1)">x</a>', "runs a script"),
    ("vbscript", '<a href="vbscript:msgbox(1)">x</a>', "runs a script"),
    ("css-escaped-url", f'<div style="background:\\75 rl({URL}.png)">x</div>', "url("),
    ("css-comment-in-url", f'<div style="background:url(/**/{URL}.png)">x</div>', "url("),
    ("webkit-image-set", f'<div style="background:-webkit-image-set(url({URL}.png) 1x)">x</div>', "url("),
    ("font-face", f"<style>@font-face {{ font-family: x; src: url('{URL}.woff2'); }}</style>", "url("),
    ("svg-set-xlink-href", '<svg><a><set attributeName="xlink:href" to="javascript:alert(1)"/></a></svg>', "runs a script"),
    ("svg-use-external", f'<svg><use href="{URL}.svg#icon"/></svg>', "loads from outside"),
    ("svg-feimage", f'<svg><filter id="f"><feImage xlink:href="{URL}.png"/></filter></svg>', "loads from outside"),
    ("button-formaction", f'<button formaction="{URL}">go</button>', "sends a request"),
    ("img-srcset", f'<img alt="x" srcset="{URL}.png 2x">', "srcset"),
    ("img-onerror", '<img alt="x" src="data:image/png;base64,AAAA" onerror="alert(1)">', "event handler"),
    ("video-poster", f'<video poster="{URL}.png"></video>', "poster"),
    ("iframe-srcdoc", '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>', "<iframe>"),
    ("data-html-link", '<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">x</a>', "document made inside the link"),
    ("meta-csp", "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">", "http-equiv"),
    ("link-prefetch", f'<link rel="prefetch" href="{URL}.js">', "<link>"),
    ("object-data", f'<object data="{URL}.swf"></object>', "<object>"),
]

# LaTeX that must not convert: a link from a formula, and braces that do not pair up.
BAD_LATEX = [
    ("mathml-href", r"$\href{javascript:alert(1)}{x}$", "links"),
    ("mathml-href-http", r"$\href{http://example.invalid}{x}$", "links"),
    ("unbalanced-open", r"$\frac{1}{2$", "unbalanced braces"),
    ("unbalanced-close", r"$x}$", "unbalanced braces"),
]


def render(cells) -> str:
    page, _, _ = handout.render(new_notebook(cells=cells), "audit", PROVENANCE)
    return page


@pytest.mark.parametrize("payload, expected", [p[1:] for p in PAYLOADS], ids=[p[0] for p in PAYLOADS])
def test_markdown_payload_is_refused(payload, expected):
    with pytest.raises(handout.HandoutError) as caught:
        render([new_markdown_cell(f"Text before.\n\n{payload}\n\nText after.")])
    message = str(caught.value)
    assert "would not be self-contained" in message and expected in message, message


@pytest.mark.parametrize("latex, expected", [p[1:] for p in BAD_LATEX], ids=[p[0] for p in BAD_LATEX])
def test_bad_latex_is_refused(latex, expected):
    with pytest.raises(handout.HandoutError, match=expected):
        render([new_markdown_cell(f"A formula: {latex}.")])


@pytest.mark.parametrize("payload", [
    f'<meta http-equiv="refresh" content="0;url={URL}"><b>table</b>',
    f"<div style=\"background-image:image-set('{URL}.png' 1x)\">x</div>",
    '<a href="java\tscript:alert(1)">x</a>',
], ids=["meta-refresh", "image-set", "javascript-tab"])
def test_html_output_payload_is_stripped_or_refused(payload):
    """An HTML output (a DataFrame, a widget's fallback) loses its active elements, and the audit refuses the rest."""
    cell = new_code_cell("show()", outputs=[new_output("display_data", data={"text/html": payload, "text/plain": "x"})])
    try:
        page = render([cell])
    except handout.HandoutError:
        return
    assert handout.audit(BeautifulSoup(page, "html.parser")) == []
    assert page.count("http-equiv") == 1 and 'http-equiv="Content-Security-Policy"' in page  # the page's own policy alone
    assert URL not in page and "script:" not in page


@pytest.mark.parametrize("fragment", [
    '<a href="https://colab.research.google.com/github/x/y/blob/main/n.ipynb">Open in Colab</a>',
    '<a href="#section-2">see section 2</a>',
    '<img alt="dot" src="data:image/png;base64,AAAA">',
    '<div style="background:url(data:image/png;base64,AAAA)">x</div>',
    '<details><summary>Answer</summary>It is 4.</details>',
    '<a href="mailto:course@example.org">write to us</a>',
], ids=["external-link", "anchor", "data-image", "data-css-url", "details", "mailto"])
def test_harmless_markup_passes(fragment):
    """Links a reader may follow and resources inside the page are not refused: the audit is not a blanket ban."""
    assert handout.audit(BeautifulSoup(f"<html><body>{fragment}</body></html>", "html.parser")) == []


def test_every_payload_case_is_distinct():
    assert len({p[0] for p in PAYLOADS}) == len(PAYLOADS) >= 11 + 5
    assert len({p[1] for p in PAYLOADS}) == len(PAYLOADS)
