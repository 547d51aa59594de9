"""Offline HTML handouts: MathML conversion, tag removal, captions, self-containment, and a real browser.

The unit tests render small hand-made notebooks and need neither a kernel nor a browser. The
module-scoped fixtures execute a fixture notebook (headings, inline and display math, a symbols
table, code, a figure shown through the contracts' ``show_figure``, ``remove-cell`` and
``remove-input`` tags, the Colab badge) and the course notebooks once, through
``builder.execute.run`` and ``python -m builder html``; the ``browser`` tests then open every
handout in headless Chromium with the network blocked.
"""

import base64
import os
import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from builder import execute, handout, inline
from builder.config import load_course
from tests.support import run_builder

# Debian's chromium by default; CI runners without it point CHROMIUM at their own Chrome binary.
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PROVENANCE = handout.Provenance("Fixture · Attention in one page", "0123abcd", "9.9.9", "references/fixture.json", "f" * 64)
ONE_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
BADGE = (
    "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
    "(https://colab.research.google.com/github/open-ml-course/transformers-course/blob/main/notebooks/fixture.ipynb)"
)

# ---------------------------------------------------------------------------------------------
# The fixture notebook: what the course notebooks will hold once written.

HEADER = f"""<!-- builder:begin header -->
# Fixture · Attention in one page

{BADGE}

*Provenance: course builder 9.9.9; reference `references/fixture.json`.*
<!-- builder:end sha256=0 -->"""

ATTENTION = r"""## Scaling by $\sqrt{d_k}$

Each query $q_i$ meets every key $k_j$ through a dot product, scaled so that its variance stays
near $1$ when $d_k$ grows:

$$
\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V
$$

The softmax of a row $z \in \mathbb{R}^{n}$ is
$$\text{softmax}(z)_i = \frac{e^{z_i}}{\sum_{j=1}^{n} e^{z_j}}.$$

| Symbol | Meaning | Shape |
| --- | --- | --- |
| $Q$ | queries, one row per position | $(T, d_k)$ |
| $K^\top$ | keys, transposed | $(d_k, T)$ |
| $\alpha_{ij}$ | weight of key $j$ for query $i$ | $0 \le \alpha_{ij} \le 1$ |
| $x_{t-1}$ | the previous token | scalar |

Shell variables such as `$HOME` and the code span `a $x$ b` stay as typed; an escaped dollar
is currency: a prompt of 100,000 tokens at \$5 per million costs \$0.50."""

LAYER_NORM = r"""### Layer norm, by hand

With mean $\mu$ and variance $\sigma^2$ of the features,
$$\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta .$$"""

SUMMARY = r"""## Summary

Greek letters ($\alpha, \beta, \gamma$) and sums $\sum_{t=1}^{T} \log p_\theta(x_t)$ all render."""

# Every LaTeX expression the rendered fixture must show as <math> (removed cells excluded).
FIXTURE_MATH = [
    r"\sqrt{d_k}", "q_i", "k_j", "1", "d_k",
    r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V",
    r"z \in \mathbb{R}^{n}", r"\text{softmax}(z)_i = \frac{e^{z_i}}{\sum_{j=1}^{n} e^{z_j}}.",
    "Q", "(T, d_k)", r"K^\top", "(d_k, T)", r"\alpha_{ij}", "j", "i", r"0 \le \alpha_{ij} \le 1", "x_{t-1}",
    r"\mu", r"\sigma^2", r"\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta .",
    r"\alpha, \beta, \gamma", r"\sum_{t=1}^{T} \log p_\theta(x_t)",
]
FIGURE_CAPTION = r"The line climbs from $0$ to $1$: read it from left to right; steeper means faster."
FIXTURE_CAPTION_MATH = ["0", "1"]
# Headings with math appear twice: in the page and in the table of contents.
FIXTURE_TOC_MATH = 1


def fixture_notebook() -> nbformat.NotebookNode:
    """Markdown, math, a table, code, a captioned figure and the removal tags, as a course notebook has them."""
    figure_code = (
        "import matplotlib\nimport matplotlib.pyplot as plt\n\n"
        + inline.source_of("Palette") + "\n\n" + inline.source_of("png_bytes") + "\n\n" + inline.source_of("shown_text_pt") + "\n\n"
        + inline.source_of("show_figure")
        + "\n\nfig, ax = plt.subplots(figsize=(3, 2), dpi=60)\nax.plot([0, 1], [0, 1])\n"
        + f"show_figure(fig, {FIGURE_CAPTION!r})\n"
    )
    cells = [
        new_markdown_cell(HEADER),
        new_markdown_cell(ATTENTION),
        new_code_cell('scores = [[1.0, 0.5], [0.5, 1.0]]\nprint("row sums:", [round(sum(r), 2) for r in scores])  # cost: $0'),
        new_markdown_cell(LAYER_NORM),
        new_code_cell(figure_code),
        new_code_cell('print("REMOVED-CELL-OUTPUT")', metadata={"tags": ["remove-cell"]}),
        new_code_cell('HIDDEN_INPUT_MARKER = 1\nprint("output of a hidden input")', metadata={"tags": ["remove-input"]}),
        new_markdown_cell(r"REMOVED-MARKDOWN $\frac{1}{2}$", metadata={"tags": ["remove-cell"]}),
        new_markdown_cell(SUMMARY),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def fake_executed(cells) -> nbformat.NotebookNode:
    """A notebook whose outputs are written by hand, so rendering needs no kernel."""
    return new_notebook(cells=cells)


def figure_outputs(caption: str | None = "*How to read it.*", alt: str | None = "How to read it.") -> list:
    """The two outputs ``show_figure`` displays: the PNG with its alt text, then the Markdown caption."""
    meta = {"image/png": {"alt": alt}} if alt else {}
    outputs = [new_output("display_data", data={"image/png": ONE_PIXEL_PNG, "text/plain": "<Figure>"}, metadata=meta)]
    if caption:
        outputs.append(new_output("display_data", data={"text/markdown": caption, "text/plain": "<Markdown>"}))
    return outputs


def render(nb, variant="full") -> tuple[str, BeautifulSoup]:
    page, _, _ = handout.render(nb, "fixture", PROVENANCE, variant=variant)
    return page, BeautifulSoup(page, "html.parser")


def text_outside_code(soup: BeautifulSoup) -> str:
    """Visible page text, without code, preformatted output, MathML, styles and the document head."""
    body = BeautifulSoup(str(soup.body), "html.parser")
    for tag in body.find_all(["pre", "code", "math", "style", "script"]):
        tag.decompose()
    return body.get_text(" ")


# ---------------------------------------------------------------------------------------------
# Unit tests: no kernel, no browser


def test_inline_and_display_math_become_mathml():
    page, soup = render(fake_executed([new_markdown_cell(r"Inline $x^2 + \frac{a}{b}$ and display $$\sqrt{d_k}$$ math.")]))
    inline_math = soup.find_all("math", display="inline")
    block_math = soup.find_all("math", display="block")
    assert len(inline_math) == 1 and inline_math[0].find("mfrac") is not None
    assert len(block_math) == 1 and block_math[0].find("msqrt") is not None
    assert "$" not in text_outside_code(soup)
    assert "\\frac" not in soup.get_text() and "\\sqrt" not in soup.get_text()  # the TeX stays only as alttext
    assert [m["alttext"] for m in soup.find_all("math")] == [r"x^2 + \frac{a}{b}", r"\sqrt{d_k}"]


def test_latex_commands_of_the_course_convert():
    for latex in [r"\frac{QK^\top}{\sqrt{d_k}}", r"\sum_{j=1}^{n} e^{z_j}", r"\text{softmax}", r"\operatorname{LN}(x)",
                  r"\mathbb{R}^{d}", r"\left( x \right)", r"a \cdot b \le c \in S \times T", r"\alpha\beta\gamma\theta\mu\sigma"]:
        mathml = handout.latex_to_mathml(latex, display=False)
        assert mathml.startswith("<math") and "\\" not in re.sub(r"<[^>]*>", "", mathml), latex


def test_function_names_get_tex_spacing():
    log = handout.latex_to_mathml(r"\log p", display=False)
    assert "<mi>log</mi><mspace" in log
    call = handout.latex_to_mathml(r"\operatorname{softmax}(z)", display=False)
    assert 'lspace="0em" rspace="0em">softmax</mo>' in call


def test_unknown_command_fails_naming_notebook_cell_and_expression():
    nb = fake_executed([new_markdown_cell("# Fine"), new_markdown_cell("All good: $x$."), new_markdown_cell(r"Broken: $\foo{x} + 1$ here.")])
    with pytest.raises(handout.HandoutError) as caught:
        render(nb)
    message = str(caught.value)
    assert "fixture: cell 2" in message
    assert r"\foo{x} + 1" in message
    assert r"\foo" in message.split("MathML:")[-1]


def test_malformed_latex_fails_too():
    nb = fake_executed([new_markdown_cell(r"Unbalanced $\frac{1}{$ and $$\sqrt{$$")])
    with pytest.raises(handout.HandoutError, match=r"cell 0.*\\frac\{1\}\{"):
        render(nb)


def test_latex_left_as_text_fails_naming_the_cell():
    stray = fake_executed([new_markdown_cell("fine"), new_markdown_cell("It costs 5$ per run.")])
    with pytest.raises(handout.HandoutError, match=r"fixture: cell 1 \(markdown cell\): raw LaTeX outside math.*costs 5\$ per run"):
        render(stray)
    bare = fake_executed([new_markdown_cell(r"The weight is \frac{1}{\sqrt{d_k}} here.")])
    with pytest.raises(handout.HandoutError, match=r"fixture: cell 0 \(markdown cell\): raw LaTeX outside math.*\\frac\{1\}"):
        render(bare)


def test_math_in_captions_and_removed_cells_is_checked():
    caption = new_code_cell("show()", outputs=figure_outputs(caption=r"*Read $\bar{x}$ as $\nope$.*", alt="Read it."))
    with pytest.raises(handout.HandoutError, match=r"cell 0 \(output 1\).*\\nope"):
        render(fake_executed([caption]))
    removed = new_markdown_cell(r"$\nope$", metadata={"tags": ["remove-cell"]})
    with pytest.raises(handout.HandoutError, match=r"cell 1.*\\nope"):
        render(fake_executed([new_markdown_cell("ok"), removed]))


def test_dollars_in_code_spans_and_escaped_dollars_stay_text():
    _, soup = render(fake_executed([new_markdown_cell(r"Run `echo $HOME` or `a $x$ b`; it costs \$5, not $y$.")]))
    codes = [c.get_text() for c in soup.find("main").find_all("code")]
    assert "echo $HOME" in codes and "a $x$ b" in codes
    assert len(soup.find("main").find_all("math")) == 1
    assert "costs $5" in soup.get_text()


def test_dollars_in_code_cells_and_outputs_are_not_math():
    cell = new_code_cell('print("$x$ costs $5")', outputs=[new_output("stream", name="stdout", text="$x$ costs $5\n")])
    _, soup = render(fake_executed([cell]))
    assert soup.find("math") is None
    assert "$x$ costs $5" in soup.find("pre").get_text()


def test_remove_cell_and_remove_input_tags():
    nb = fake_executed([
        new_markdown_cell("gone markdown", metadata={"tags": ["remove-cell"]}),
        new_code_cell("GONE_SOURCE = 1", metadata={"tags": ["remove-cell"]},
                      outputs=[new_output("stream", name="stdout", text="gone output\n")]),
        new_code_cell("HIDDEN_SOURCE = 1", metadata={"tags": ["remove-input"]},
                      outputs=[new_output("stream", name="stdout", text="kept output\n")]),
        new_code_cell("SHOWN_SOURCE = 1", outputs=[new_output("stream", name="stdout", text="shown output\n")]),
    ])
    page, _ = render(nb)
    for gone in ("gone markdown", "GONE_SOURCE", "gone output", "HIDDEN_SOURCE"):
        assert gone not in page
    for kept in ("kept output", "SHOWN_SOURCE", "shown output"):
        assert kept in page


def test_reading_handout_has_no_code_inputs():
    nb = fake_executed([new_markdown_cell("Prose $x$."), new_code_cell("SECRET_SOURCE = 1", outputs=[new_output("stream", name="stdout", text="the number\n")])])
    page, soup = render(nb, variant="reading")
    assert "SECRET_SOURCE" not in page and "the number" in page
    assert soup.find("math") is not None
    assert "Reading handout" in soup.find("header").get_text()


def test_figures_are_embedded_with_alt_text_and_caption():
    nb = fake_executed([new_code_cell("show()", outputs=figure_outputs(caption="*Read the *bold* bars; taller is better.*", alt="Read the bold bars; taller is better."))])
    page, soup = render(nb)
    figures = soup.find_all("figure")
    assert len(figures) == 1
    img = figures[0].find("img")
    assert img["src"].startswith("data:image/png;base64,")
    assert img["alt"] == "Read the bold bars; taller is better."
    assert "taller is better" in figures[0].find("figcaption").get_text()
    assert page.count("taller is better") == 2  # once as alt text, once as the caption, not a third time


def test_alt_text_falls_back_to_the_markdown_caption():
    nb = fake_executed([new_code_cell("show()", outputs=figure_outputs(caption=r"*Height is $\sqrt{n}$.*", alt=None))])
    _, soup = render(nb)
    assert soup.find("img")["alt"] == r"Height is \sqrt{n}."
    assert soup.find("figcaption").find("math") is not None


def test_figure_without_caption_fails_naming_the_cell():
    nb = fake_executed([new_markdown_cell("x"), new_code_cell("plt.show()", outputs=figure_outputs(caption=None, alt=None))])
    with pytest.raises(handout.HandoutError, match=r"fixture: cell 1: figure \(output 0\) has no caption.*show_figure"):
        render(nb)


def test_colab_badge_becomes_a_text_link():
    _, soup = render(fake_executed([new_markdown_cell(HEADER)]))
    link = soup.find("main").find("a", href=re.compile("colab.research.google.com/github"))
    assert link is not None and link.get_text(strip=True) == "Open In Colab"
    assert link.find("img") is None
    assert "colab-badge.svg" not in str(soup)


def test_network_image_outside_a_link_fails():
    nb = fake_executed([new_markdown_cell("![diagram](https://example.org/diagram.png)")])
    with pytest.raises(handout.HandoutError, match=r"cell 0.*https://example.org/diagram.png.*lives on the network"):
        render(nb)


def test_relative_image_is_embedded_or_fails_naming_the_cell(tmp_path):
    (tmp_path / "dot.png").write_bytes(base64.b64decode(ONE_PIXEL_PNG))
    nb = fake_executed([new_markdown_cell("![a dot](dot.png)")])
    page, _, _ = handout.render(nb, "fixture", PROVENANCE, path=tmp_path)
    assert '<img alt="a dot" src="data:image/png;base64,' in page
    missing = fake_executed([new_markdown_cell("x"), new_markdown_cell("![gone](figures/gone.svg)")])
    with pytest.raises(handout.HandoutError, match=r"fixture: cell 1: image 'figures/gone.svg' was not found"):
        handout.render(missing, "fixture", PROVENANCE, path=tmp_path)


def test_no_script_and_no_network_resources():
    nb = fake_executed([
        new_markdown_cell(ATTENTION),
        new_code_cell("x", outputs=[
            new_output("display_data", data={"text/html": '<b>bold</b><script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="https://cdn.example/a.css">'}),
            new_output("display_data", data={"application/javascript": "alert(1)"}),
            *figure_outputs(),
        ]),
    ])
    page, soup = render(nb)
    assert not soup.find_all(["script", "link", "iframe"])
    assert "<script" not in page.lower() and "require.js" not in page and "mathjax" not in page.lower()
    for tag in soup.find_all(src=True):
        assert tag["src"].startswith("data:"), tag
    for style in soup.find_all("style"):
        assert "@import" not in style.get_text() and not re.search(r"url\(\s*['\"]?(https?:)?//", style.get_text())
    assert not re.search(r"""(src|href)=["'](https?:)?//[^"']*\.(css|js|woff2?|ttf|otf)\b""", page)
    assert handout.audit(soup) == []


U = "http://example.invalid/slip"
# Payloads that Python's html.parser read as inert and Chromium's HTML5 parser does not (issue 41): comments and CDATA
# that end earlier than html.parser thought, an <img> that breaks out of SVG's <style>, and url() in SVG presentation
# attributes. (case id, raw HTML, a phrase the refusal must contain)
HTML5_PAYLOADS = [
    ("comment-abrupt", f"<!--><img src={U}/a.png>-->", "loads from outside"),
    ("comment-abrupt-onerror", "<!--><img src=x onerror=alert(1)>-->", "event handler"),
    ("comment-bang-end", f"<!-- x --!><img src={U}/b.png> -->", "loads from outside"),
    ("comment-bang-end-onerror", "<!-- x --!><img src=x onerror=alert(2)> -->", "event handler"),
    ("cdata-in-html", f"<![CDATA[><img src={U}/c.png>]]>", "loads from outside"),
    ("cdata-in-html-onerror", "<![CDATA[><img src=x onerror=alert(3)>]]>", "event handler"),
    ("svg-style-breakout", f"<svg><style><img src={U}/d.png></style></svg>", "loads from outside"),
    ("svg-style-breakout-onerror", "<svg><style><img src=x onerror=alert(4)></style></svg>", "event handler"),
    # Inert as parsed, but its serialization is not: the text "<img ...>" inside SVG's <style> is written unescaped.
    ("svg-style-escaped-breakout", f"<svg><style>&lt;img src={U}/j.png&gt;</style></svg>", "loads from outside"),
    ("svg-fill-url", f'<svg width="10" height="10"><rect width="10" height="10" fill="url({U}/e.svg#g)"/></svg>', "url("),
    ("svg-mask-url", f'<svg width="10" height="10"><rect width="10" height="10" mask="url({U}/f.svg#m)"/></svg>', "url("),
    ("svg-marker-end-url", f'<svg width="10" height="10"><line x2="10" y2="10" stroke="black" marker-end="url({U}/g.svg#k)"/></svg>', "url("),
    ("svg-cursor-url", f'<svg width="10" height="10"><rect width="10" height="10" cursor="url({U}/h.cur), auto"/></svg>', "url("),
    ("svg-filter-url-escaped", f'<svg width="10" height="10"><rect width="10" height="10" filter="\\75 rl({U}/i.svg#f)"/></svg>', "url("),
]


@pytest.mark.parametrize("payload, expected", [p[1:] for p in HTML5_PAYLOADS], ids=[p[0] for p in HTML5_PAYLOADS])
def test_the_audit_reads_the_page_as_a_browser_does(payload, expected):
    """Each payload, in Markdown or in an HTML output, is refused, named; nothing of it is written."""
    for cell in (new_markdown_cell(f"Text before.\n\n{payload}\n\nText after."),
                 new_code_cell("show()", outputs=[new_output("display_data", data={"text/html": payload, "text/plain": "x"})])):
        with pytest.raises(handout.HandoutError) as caught:
            render(fake_executed([cell]))
        assert "would not be self-contained" in str(caught.value) and expected in str(caught.value), str(caught.value)


def test_internal_svg_references_and_plain_comments_pass():
    """url(#id) inside the page is no fetch, and a comment that closes where both parsers agree is dropped, not refused."""
    nb = fake_executed([new_markdown_cell('<svg width="10" height="10"><defs><linearGradient id="g"/></defs>'
                                          '<rect width="10" height="10" fill="url(#g)"/></svg>\n\n<!-- a note for authors -->\n\nText.')])
    page, soup = render(nb)
    assert soup.find("rect")["fill"] == "url(#g)" and "a note for authors" not in page


def test_every_page_carries_its_own_content_security_policy():
    page, soup = render(fake_executed([new_markdown_cell(ATTENTION)]))
    policy = handout.page.own_csp(soup)
    assert policy is not None and policy["content"] == handout.page.CSP
    assert "default-src 'none'" in handout.page.CSP and "img-src data:" in handout.page.CSP
    assert "style-src 'unsafe-inline'" in handout.page.CSP and "script-src" not in handout.page.CSP
    assert page.count("http-equiv") == 1


def test_what_is_written_is_what_was_audited(monkeypatch):
    """A serialization a browser would read differently from the audited tree is refused: the audit parses the output again."""
    real = handout.page.audit
    calls = []
    monkeypatch.setattr(handout.page, "audit", lambda soup: calls.append(str(soup)) or real(soup))
    page, _ = render(fake_executed([new_markdown_cell(ATTENTION)]))
    assert len(calls) == 2 and calls[0] == calls[1]  # a clean page reads back as the same tree


def test_audit_catches_network_resources():
    soup = BeautifulSoup(
        '<html><head><link rel="stylesheet" href="https://x/y.css"><style>@import url(https://x/f.css);'
        ' @font-face { src: url(https://x/f.woff2); }</style></head><body><img src="https://x/i.png">'
        '<script>1</script></body></html>', "html.parser")
    problems = "\n".join(handout.audit(soup))
    for expected in ("<link>", "<script>", "<img src=", "url(https://x/f.woff2)", "@import"):
        assert expected in problems


def test_header_toc_and_print_stylesheet():
    nb = fake_executed([new_markdown_cell(HEADER), new_markdown_cell(ATTENTION), new_markdown_cell(LAYER_NORM),
                        new_markdown_cell(SUMMARY), new_markdown_cell("## Summary\n\nA second heading with the same text.")])
    page, soup = render(nb)
    header = soup.find("header").get_text(" ")
    for fact in (PROVENANCE.commit, PROVENANCE.version, PROVENANCE.reference_sha256, "CC BY-SA 4.0"):
        assert fact in header
    # The title once on the page (its <h1>), the provenance once (the header): not again in the lesson or the contents.
    body = soup.find("body")
    assert body.get_text(" ").count(PROVENANCE.title) == 1 and soup.find("h1").get_text(strip=True) == PROVENANCE.title
    assert "Provenance" not in soup.find("main").get_text(" ")
    links = soup.find("nav", id="toc").find_all("a")
    targets = [a["href"][1:] for a in links]
    assert len(targets) == 4 and len(set(targets)) == 4
    for target in targets:
        assert soup.find(id=target).name in ("h2", "h3")
    assert links[0].find("math") is not None  # the heading's math is kept in its entry
    css = " ".join(s.get_text() for s in soup.find_all("style"))
    assert re.search(r"@page\s*{[^}]*size:\s*A4", css)
    assert re.search(r"break-inside:\s*avoid", css)
    assert re.search(r"pre\s*{[^}]*white-space:\s*pre-wrap", css)


RUN_PROSE = """**How to run this notebook.** Use *Runtime → Run all*. A CPU runtime is enough.

**Predict, then run (1).** Before you run the next code cell, guess. Write your letter in the cell below and run it.

The lesson goes on here."""


def test_a_reading_handout_carries_no_instructions_for_running_code():
    nb = fake_executed([
        new_markdown_cell(HEADER), new_markdown_cell(RUN_PROSE),
        new_code_cell("# Setup 1 of 3: install what is missing\ninstall_missing([])",
                      outputs=[new_output("stream", name="stdout", text="All required packages are already installed.\n")]),
        new_code_cell("judge_prediction('Predict, then run (1)', None, 'c')", outputs=[new_output(
            "stream", name="stdout", text="Predict, then run (1): no prediction yet (set it above and run that cell, then this one).\n")]),
        new_code_cell("# @title The toolkit\nprint('toolkit ready')", metadata={"tags": ["hide-input"]},
                      outputs=[new_output("stream", name="stdout", text="toolkit ready\n")]),
        new_code_cell("print(2 + 2)", outputs=[new_output("stream", name="stdout", text="4\n")]),
    ])
    _, soup = render(nb, variant="reading")
    text = soup.find("main").get_text(" ")
    for phrase in ("How to run", "Run all", "Predict, then run", "run that cell", "already installed", "toolkit ready"):
        assert phrase not in text, phrase
    assert "The lesson goes on here." in text and "4" in text
    _, full = render(nb, variant="full")
    assert "How to run" in full.find("main").get_text(" ") and "already installed" in full.get_text()


def test_a_russian_reading_handout_leaves_out_the_same_instructions():
    prov = handout.Provenance("Модуль 0", "0", "9.9.9", "references/fixture.json", "f" * 64, "ru")
    nb = fake_executed([new_markdown_cell("**Как запускать этот ноутбук.** Выберите *Выполнить все*.\n\nУрок идёт дальше."),
                        new_code_cell("judge_prediction(...)", outputs=[new_output(
                            "stream", name="stdout", text="Предскажите, затем запустите (1): прогноза ещё нет.\n")])])
    page, _, _ = handout.render(nb, "fixture", prov, variant="reading")
    assert "Как запускать" not in page and "прогноза ещё нет" not in page and "Урок идёт дальше." in page


def test_no_handout_shows_solution_markers_but_each_keeps_the_solution():
    nb = fake_executed([new_code_cell("# Exercise 1: add\ndef add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION\n")])
    for variant in handout.VARIANTS:
        page, _ = render(nb, variant=variant)
        assert "BEGIN SOLUTION" not in page and "END SOLUTION" not in page, variant
    page, soup = render(nb, variant="full")
    assert "return" in soup.find("main").get_text() and "add" in soup.find("main").get_text()


def test_the_index_lists_every_module_in_every_language_with_summary_time_and_links(tmp_path):
    from builder.handout import site

    course = load_course()
    editions = course.select_editions(None)
    (tmp_path / f"{editions[0].edition}.html").write_text("x")  # one handout written, the others not yet
    page = (site.write_index(course, tmp_path)).read_text(encoding="utf-8")
    soup = BeautifulSoup(page, "html5lib")
    rows = soup.select("tbody tr")
    assert len(rows) == len(editions) == len(course.notebooks) * (1 + len(course.languages))
    for nb, row in zip(sorted(editions, key=lambda e: e.language != "en"), rows):
        assert row.find("th").get_text() == nb.title and re.search(r"\d h|\d ч", row.get_text())
    assert [a["href"] for a in soup.find_all("a")] == [f"{editions[0].edition}.html"]
    assert "python -m builder html" in soup.get_text()  # a handout not written yet says how to write it
    assert {t["lang"] for t in soup.find_all("table")} == {"en", *course.languages}
    assert handout.page.own_csp(soup) is not None and not soup.find_all("script") and handout.audit(soup) == []


def test_course_notebooks_math_converts():
    """Every LaTeX expression in the committed notebooks and their student editions converts (no kernel needed)."""
    course = load_course()
    for nb in course.notebooks:
        for path in (nb.ipynb, getattr(nb, "student_ipynb", nb.ipynb)):
            assert handout.math_problems(nbformat.read(path, as_version=4), path.name) == []


def test_builder_html_names_the_broken_formula_before_executing(repo_copy):
    source = repo_copy / "notebooks" / "module3_basic_transformer.py"
    text = source.read_text(encoding="utf-8").rstrip("\n")
    source.write_text(text + "\n\n# %% [markdown]\n# Softmax is $\\softmax(z)$ here.\n", encoding="utf-8")
    assert run_builder(repo_copy, "build").returncode == 0  # the new cell has no translation yet
    cells = nbformat.read(repo_copy / "notebooks" / "module3_basic_transformer.ipynb", as_version=4).cells
    index = next(i for i, c in enumerate(cells) if "\\softmax(z)" in c.source)
    result = run_builder(repo_copy, "html", "module3")
    assert result.returncode == 1
    assert f"module3_basic_transformer: cell {index}" in result.stderr and "\\softmax(z)" in result.stderr, result.stderr
    assert "wall" not in result.stdout  # stopped before the kernel run
    assert not (repo_copy / "dist" / "handouts").exists()


def test_source_commit_outside_git(tmp_path):
    assert handout.source_commit(tmp_path) == "unknown"


# ---------------------------------------------------------------------------------------------
# Real handouts: executed notebooks, exported once per module


@pytest.fixture(scope="module")
def fixture_handouts(tmp_path_factory) -> dict[str, handout.Handout]:
    """The fixture notebook executed by a real kernel and exported in both variants."""
    folder = tmp_path_factory.mktemp("fixture")
    source = folder / "fixture_handout.ipynb"
    nbformat.write(fixture_notebook(), source)
    result = execute.run(source, folder / "executed")
    assert result.error is None, result.error
    written = handout.export(result.executed, folder / "handouts", "fixture_handout", PROVENANCE)
    return {h.variant: h for h in written}


@pytest.mark.slow
def test_fixture_handouts_hold_every_formula_and_figure(fixture_handouts):
    expected = len(FIXTURE_MATH) + len(FIXTURE_CAPTION_MATH) + FIXTURE_TOC_MATH
    for variant, page in fixture_handouts.items():
        soup = BeautifulSoup(page.path.read_text(encoding="utf-8"), "html.parser")
        assert page.math == expected == len(soup.find_all("math")), variant
        assert page.figures == 1 and len(soup.find_all("img")) == 1
        assert soup.find("img")["alt"] == handout.alt_text(FIGURE_CAPTION)
        text = soup.get_text()
        assert "REMOVED-CELL-OUTPUT" not in text and "REMOVED-MARKDOWN" not in text
        assert "HIDDEN_INPUT_MARKER" not in text and "output of a hidden input" in text
        assert "row sums: [1.5, 1.5]" in text
        assert ("scores = [[1.0" in text) == (variant == "full")


@pytest.mark.slow
def test_fixture_figure_is_sharp_and_no_wider_than_shown(fixture_handouts):
    """show_figure writes twice the shown pixels, the width to show (3 in at 96 px/in), and the smallest text size."""
    import struct

    nb = nbformat.read(fixture_handouts["full"].path.parent.parent / "executed" / "fixture_handout.ipynb", as_version=4)
    output = next(o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    png = base64.b64decode(output["data"]["image/png"])
    meta = output["metadata"]["image/png"]
    assert struct.unpack(">I", png[16:20])[0] == 2 * meta["width"] == 2 * 288
    assert meta["smallest_text_pt"] == 10.0  # matplotlib's default tick labels, shown at their own size
    img = BeautifulSoup(fixture_handouts["full"].path.read_text(encoding="utf-8"), "html.parser").find("img")
    assert img["width"] == "288"


@pytest.mark.slow
def test_fixture_math_matches_the_source(fixture_handouts):
    nb = nbformat.read(fixture_handouts["full"].path.parent.parent / "executed" / "fixture_handout.ipynb", as_version=4)
    kept = nbformat.v4.new_notebook(cells=[c for c in nb.cells if "remove-cell" not in c.metadata.get("tags", [])])
    assert sorted(e.strip() for e in handout.math_expressions(kept)) == sorted(e.strip() for e in FIXTURE_MATH + FIXTURE_CAPTION_MATH)


@pytest.mark.slow
def test_builder_html_writes_full_and_reading_handouts(course_handouts):
    paths, report = course_handouts
    course = load_course()
    expected = sorted(f"{nb.edition}{suffix}" for nb in course.select_editions(None) for suffix in (".html", ".reading.html"))
    assert [p.name for p in paths] == expected
    assert report.count("wrote ") == len(expected) + 1 and "<math>" in report  # and index.html
    index = BeautifulSoup((paths[0].parent / "index.html").read_text(encoding="utf-8"), "html5lib")
    assert sorted(a["href"] for a in index.find_all("a")) == expected  # every handout, each once


@pytest.mark.slow
def test_no_handout_shows_solution_markers_or_run_instructions_and_each_states_its_title_once(course_handouts):
    """The course's own handouts: 0 solution markers anywhere; a reading handout says nothing about running code."""
    from builder.handout.words import RUN_LABELS

    course = load_course()
    titles = {f"{nb.edition}": nb.title for nb in course.select_editions(None)}
    for path in course_handouts[0]:
        page = path.read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in page and "END SOLUTION" not in page, path.name
        soup = BeautifulSoup(page, "html.parser")
        edition = path.name.removesuffix(".html").removesuffix(".reading")
        assert soup.find("body").get_text(" ").count(titles[edition]) == 1 + (titles[edition] in soup.find("nav").get_text(" ")), path.name
        if path.name.endswith(".reading.html"):
            text = soup.find("main").get_text(" ")
            found = [label for labels in RUN_LABELS.values() for label in labels if label in text]
            phrases = ("Run all", "Выполнить все", "run that cell", "run them", "запустите их", "already installed",
                       "toolkit ready")
            found += [phrase for phrase in phrases if phrase in text]
            assert found == [], (path.name, found)


# ---------------------------------------------------------------------------------------------
# Headless Chromium, network blocked

INSPECT = """() => {
  const visibleText = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest('pre, code, math, style, script')) continue;
    visibleText.push(node.textContent);
  }
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  // The answers gathered for print repeat the lesson's math and headings; the screen never shows them.
  const shown = (el) => !el.closest('.print-answers');
  const headings = [...document.querySelectorAll('main h2, main h3')].filter(shown).map(h => h.id);  // the h1 is the title
  const toc = [...document.querySelectorAll('nav#toc a')].map(a => {
    const id = decodeURIComponent(a.getAttribute('href').slice(1));
    const target = document.getElementById(id);
    return {id, tag: target ? target.tagName : null};
  });
  const fractions = [...document.querySelectorAll('mfrac')].filter(shown).map(f => {
    const [num, den] = f.children;
    return num.getBoundingClientRect().bottom <= den.getBoundingClientRect().top + 1;
  });
  return {
    text: visibleText.join(' '),
    math: [...document.querySelectorAll('math')].filter(shown).map(box),
    mathDisplay: [...document.querySelectorAll('math')].filter(shown).map(m => getComputedStyle(m).display),
    fractions,
    headings,
    toc,
  };
}"""

DECODE_IMAGES = """async () => Promise.all([...document.images].map(async (img) => {
  try { await img.decode(); } catch (e) { return {ok: false, alt: img.alt, error: String(e)}; }
  return {ok: true, width: img.naturalWidth, height: img.naturalHeight, alt: img.alt};
}))"""

PRINT_STYLE = """() => ({
  pre: [...document.querySelectorAll('pre')].map(p => getComputedStyle(p).whiteSpace),
  figures: [...document.querySelectorAll('figure')].map(f => getComputedStyle(f).breakInside),
})"""


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by Playwright; never a downloaded browser."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent; `apt-get install -y chromium` (done by .ci/run) provides it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


_INSPECTIONS: dict[Path, dict] = {}


def inspect_in_browser(browser, path: Path) -> dict:
    """Open one handout with every request except its own file blocked; measure what the tests assert."""
    if path in _INSPECTIONS:
        return _INSPECTIONS[path]
    own = path.resolve().as_uri()
    blocked, requested = [], []
    context = browser.new_context()
    page = context.new_page()

    def route(request_route):
        url = request_route.request.url
        if url == own or url.startswith("data:"):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    page.route("**/*", route)
    page.on("request", lambda request: requested.append(request.url))
    page.goto(own, wait_until="load")
    result = page.evaluate(INSPECT)
    result["images"] = page.evaluate(DECODE_IMAGES)
    pdf = page.pdf(format="A4", print_background=True)
    result["pdf_pages"] = len(re.findall(rb"/Type\s*/Page(?!s)", pdf))
    page.emulate_media(media="print")
    result["print"] = page.evaluate(PRINT_STYLE)
    result["blocked"] = blocked
    result["foreign"] = [u for u in requested if u != own and not u.startswith("data:")]
    context.close()
    _INSPECTIONS[path] = result
    return result


def all_handouts(fixture_handouts, course_handouts) -> list[Path]:
    return [h.path for h in fixture_handouts.values()] + course_handouts[0]


@pytest.mark.browser
@pytest.mark.slow
def test_browser_blocks_no_request(browser, fixture_handouts, course_handouts):
    for path in all_handouts(fixture_handouts, course_handouts):
        seen = inspect_in_browser(browser, path)
        assert seen["blocked"] == [], (path.name, seen["blocked"])
        assert seen["foreign"] == [], (path.name, seen["foreign"])


@pytest.mark.browser
@pytest.mark.slow
def test_browser_decodes_every_image(browser, fixture_handouts, course_handouts):
    for path in all_handouts(fixture_handouts, course_handouts):
        for image in inspect_in_browser(browser, path)["images"]:
            assert image["ok"] and image["width"] > 0 and image["height"] > 0, (path.name, image)
            assert image["alt"].strip(), (path.name, "image without alt text")
    fixture = inspect_in_browser(browser, fixture_handouts["full"].path)
    assert len(fixture["images"]) == 1


@pytest.mark.browser
@pytest.mark.slow
def test_browser_renders_every_formula_as_mathml(browser, fixture_handouts, course_handouts):
    handouts = {h.path: h.math for h in fixture_handouts.values()}
    for path in course_handouts[0]:
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        handouts[path] = len([m for m in soup.find_all("math") if not m.find_parent(class_="print-answers")])
    for path, expected in handouts.items():
        seen = inspect_in_browser(browser, path)
        assert len(seen["math"]) == expected, path.name
        empty = [i for i, (w, h) in enumerate(seen["math"]) if not (w > 0 and h > 0)]
        assert empty == [], (path.name, "formulas with an empty box", empty)
        assert set(seen["mathDisplay"]) <= {"math", "block math", "inline math"}, seen["mathDisplay"]
        assert all(seen["fractions"]), (path.name, "a fraction whose numerator is not above its denominator")
    fixture = inspect_in_browser(browser, fixture_handouts["full"].path)
    assert len(fixture["math"]) == len(FIXTURE_MATH) + len(FIXTURE_CAPTION_MATH) + FIXTURE_TOC_MATH
    assert len(fixture["fractions"]) >= 3


@pytest.mark.browser
@pytest.mark.slow
def test_browser_shows_no_raw_latex(browser, fixture_handouts, course_handouts):
    # A dollar right before a digit is currency, escaped in the source (\$5); any other is raw LaTeX.
    raw = re.compile(r"\$(?!\d)|\\[A-Za-z]+")
    for path in all_handouts(fixture_handouts, course_handouts):
        text = inspect_in_browser(browser, path)["text"]
        assert raw.findall(text) == [], (path.name, [text[max(m.start() - 40, 0):m.end() + 40] for m in raw.finditer(text)])
    assert "at $5 per million costs $0.50" in " ".join(inspect_in_browser(browser, fixture_handouts["full"].path)["text"].split())


@pytest.mark.browser
def test_browser_harness_sees_and_blocks_network_requests(browser, tmp_path):
    """The blocking route works: a page that asks for a network image gets it blocked and counted."""
    page = tmp_path / "leaky.html"
    page.write_text('<!DOCTYPE html><html><body><p>$x$</p><img src="http://example.invalid/x.png" alt="x"></body></html>')
    seen = inspect_in_browser(browser, page)
    assert seen["blocked"] == ["http://example.invalid/x.png"]
    assert seen["text"].strip() == "$x$"


@pytest.mark.browser
@pytest.mark.slow
def test_browser_toc_links_resolve_to_headings(browser, fixture_handouts, course_handouts):
    for path in all_handouts(fixture_handouts, course_handouts):
        seen = inspect_in_browser(browser, path)
        assert seen["toc"], path.name
        for link in seen["toc"]:
            assert link["tag"] in ("H2", "H3"), (path.name, link)  # the contents list what lies under the title
        assert [link["id"] for link in seen["toc"]] == seen["headings"], path.name


@pytest.mark.browser
@pytest.mark.slow
def test_browser_prints_to_a4_pdf(browser, fixture_handouts, course_handouts):
    for path in all_handouts(fixture_handouts, course_handouts):
        seen = inspect_in_browser(browser, path)
        assert seen["pdf_pages"] > 0, path.name
        assert set(seen["print"]["pre"]) <= {"pre-wrap"}, (path.name, seen["print"]["pre"])
        assert set(seen["print"]["figures"]) <= {"avoid"}, (path.name, seen["print"]["figures"])

