"""Handouts every reader can use: axe-core at zero, the page's language, landmarks, answers that stay hidden.

The browser tests run axe-core (pinned in .ci/axe/package.json, installed by .ci/run with
``npm ci``) on every handout ``python -m builder html`` writes (the shared ``course_handouts``
fixture of test_html.py: each notebook executes once per run), at WCAG 2.0-2.2 A and AA plus
axe's best practices. The unit tests render hand-made notebooks and need neither kernel nor browser.
"""

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from builder import handout
from builder.config import load_course
from tests.test_html import CHROMIUM_ARGS, browser, figure_outputs  # noqa: F401  (fixtures; course_handouts is conftest's)

AXE = Path(__file__).resolve().parent.parent / ".ci" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
PROVENANCE = handout.Provenance("Модуль 0 · Проверка", "0123abcd", "9.9.9", "references/fixture.json", "f" * 64, "ru")

# Module 3's self-test as its source writes it: blank lines inside <details>, Markdown and math in the answer.
SELF_TEST = """## Self-test

**Why divide by √d_k?**

<details><summary>Answer</summary>

For unit-variance entries the variance of $q \\cdot k$ is $d_k$.

A second paragraph of the same answer.

</details>

**What does the causal mask buy?**

<details>
<summary>Answer</summary>
Earlier outputs never depend on later tokens.
</details>

1. First listed question.
   <details><summary>Answer</summary>One.</details>
2. Second listed question.
   <details><summary>Answer</summary>Two.</details>
"""


def render(cells, prov=PROVENANCE, variant="full") -> BeautifulSoup:
    page, _, _ = handout.render(new_notebook(cells=cells), "fixture", prov, variant=variant)
    return BeautifulSoup(page, "html.parser")


def english(prov=PROVENANCE) -> handout.Provenance:
    return handout.Provenance("Module 0 · Check", prov.commit, prov.version, prov.reference, prov.reference_sha256)


# ---------------------------------------------------------------------------------------------
# Unit tests: no kernel, no browser


def test_russian_edition_has_russian_lang_and_furniture():
    soup = render([new_markdown_cell("## Раздел\n\nТекст."), new_code_cell("x = 1", metadata={"tags": ["hide-input"]})])
    assert soup.html["lang"] == "ru"
    header = soup.find("header").get_text(" ")
    for word in ("Конспект", "Коммит исходников", "Сборщик курса", "Эталон"):
        assert word in header
    assert soup.find("nav", id="toc").get_text(" ", strip=True).startswith("Содержание")
    assert "Код не напечатан" in soup.find("main").get_text()
    english_words = re.compile(r"\b(Handout|Contents|Source commit|Code not printed|Reference|Skip)\b")
    assert english_words.findall(soup.body.get_text(" ")) == []


def test_english_edition_keeps_english():
    soup = render([new_markdown_cell("## Section")], english())
    assert soup.html["lang"] == "en" and "Handout" in soup.find("header").get_text()


def test_unknown_language_fails_naming_the_table():
    prov = handout.Provenance("t", "c", "v", "r", "s", "xx")
    with pytest.raises(handout.HandoutError, match="builder/handout/words.py"):
        render([new_markdown_cell("x")], prov)


def test_skip_link_leads_to_main():
    soup = render([new_markdown_cell("## A\n\ntext")], english())
    first = soup.body.find(True)
    assert first.name == "a" and first["href"] == "#lesson" and first.get_text() == "Skip to the lesson"
    assert soup.find("main")["id"] == "lesson"


def test_every_details_keeps_its_answer_and_names_its_question():
    soup = render([new_markdown_cell(SELF_TEST)], english())
    main = soup.find("main")
    details = [d for d in main.find_all("details") if not d.find_parent(class_="print-answers")]
    assert len(details) == 4
    summaries = [d.find("summary").get_text() for d in details]
    assert summaries == ["Answer to question 1", "Answer to question 2", "Answer to question 1", "Answer to question 2"]
    assert "variance of" in details[0].get_text() and "second paragraph" in details[0].get_text().lower()
    assert details[0].find("math") is not None
    assert "never depend" in details[1].get_text()
    assert [d.get_text() for d in details[2:]] == ["Answer to question 1One.", "Answer to question 2Two."]
    for paragraph in main.find_all("p"):  # no answer leaked out of its disclosure
        if "variance of" in paragraph.get_text():
            assert paragraph.find_parent("details") or paragraph.find_parent(class_="print-answers")


def test_answers_are_gathered_for_print_in_order():
    soup = render([new_markdown_cell(SELF_TEST)])
    gathered = soup.find(class_="print-answers")
    assert gathered.find("h2").get_text() == "Ответы на вопросы"
    labels = [p.get_text() for p in gathered.find_all(class_="print-answer-label")]
    assert labels == ["Ответ на вопрос 1", "Ответ на вопрос 2", "Ответ на вопрос 1", "Ответ на вопрос 2"]
    assert "variance of" in gathered.get_text() and gathered.find("details") is None
    css = " ".join(s.get_text() for s in soup.find_all("style"))
    assert re.search(r"\.print-answers\s*{\s*display:\s*none", css)


def test_gathered_answers_do_not_repeat_ids():
    soup = render([new_markdown_cell('<details><summary>Answer</summary>\n\n<p id="unique">It is 4.</p>\n\n</details>')])
    assert len(soup.find_all(id="unique")) == 1
    assert "It is 4." in soup.find(class_="print-answers").get_text()


def test_every_formula_carries_its_tex():
    soup = render([new_markdown_cell(r"Inline $\frac{a}{b}$ and $$\sum_{j=1}^{n} e^{z_j}$$")])
    assert [m["alttext"] for m in soup.find_all("math")] == [r"\frac{a}{b}", r"\sum_{j=1}^{n} e^{z_j}"]


def test_figure_width_and_alt_come_from_show_figure():
    outputs = figure_outputs(caption="*Loss falls with steps. Read the gap between the lines as overfitting.*", alt="Loss falls with steps.")
    outputs[0]["metadata"]["image/png"]["width"] = 640
    img = render([new_code_cell("show()", outputs=outputs)]).find("img")
    assert img["width"] == "640" and img["alt"] == "Loss falls with steps."


def test_export_reports_figures_with_small_text(tmp_path):
    import nbformat

    outputs = figure_outputs()
    outputs[0]["metadata"]["image/png"]["smallest_text_pt"] = 7.5
    fine = figure_outputs()
    fine[0]["metadata"]["image/png"]["smallest_text_pt"] = 10.0
    source = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[new_markdown_cell("x"), new_code_cell("show()", outputs=outputs), new_code_cell("show()", outputs=fine)]), source)
    written = handout.export(source, tmp_path / "out", "nb", english(), ("reading",))
    assert written[0].small_text == ("cell 1: 7.5 pt",)
    assert "1 with text under 9 pt as shown (cell 1: 7.5 pt)" in written[0].summary()


def test_short_code_is_kept_whole_and_long_code_may_break():
    short = new_code_cell("x = 1\ny = 2", outputs=[])
    long = new_code_cell("\n".join(f"v{i} = {i}" for i in range(40)), outputs=[])
    blocks = render([short, long]).select(".jp-InputArea-editor")
    assert ["keep-whole" in b["class"] for b in blocks] == [True, False]


def test_print_stylesheet_has_page_numbers_running_header_and_link_targets():
    soup = render([new_markdown_cell("## A\n\n[the paper](https://arxiv.org/abs/1706.03762)")])
    css = " ".join(s.get_text() for s in soup.find_all("style"))
    assert re.search(r"@bottom-center\s*{\s*content:\s*counter\(page\)", css)
    assert '@top-center { content: "Модуль 0 · Проверка"; }' in css
    assert re.search(r'a\[href\^="http"\]::after\s*{\s*content:\s*" <" attr\(href\) ">"', css)


def test_syntax_colours_reach_aa_on_the_code_background():
    from builder.handout.colour import AA_TEXT, contrast
    from builder.handout.exporter import CODE_BACKGROUND

    soup = render([new_code_cell("x = 1 if y not in z else 2  # comment", outputs=[])])
    css = " ".join(s.get_text() for s in soup.find_all("style"))
    colours = re.findall(r"(?<![-\w])color:\s*(#[0-9A-Fa-f]{6})\b", css)
    assert len(colours) > 20
    weak = sorted({c for c in colours if contrast(c, CODE_BACKGROUND) < AA_TEXT})
    assert weak == [], weak


@pytest.mark.slow
def test_course_handouts_hold_every_answer_and_every_formulas_tex(course_handouts):  # noqa: F811
    """Module 3 writes its answers with blank lines inside <details>: none may be left empty again."""
    course = load_course()
    for path in course_handouts[0]:
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        name = path.name.removesuffix(".html").removesuffix(".reading")
        edition = next(nb for nb in course.select_editions(None) if nb.edition == name)
        assert soup.html["lang"] == edition.language, path.name
        for details in soup.find("main").find_all("details"):
            summary = details.find("summary")
            answer = "".join(c.get_text() if hasattr(c, "get_text") else str(c) for c in details.contents if c is not summary)
            assert answer.strip(), (path.name, "an empty disclosure", summary.get_text())
            assert re.search(r"\d", summary.get_text()), (path.name, "a summary that names no question", summary.get_text())
        assert all(m.get("alttext", "").strip() for m in soup.find_all("math")), path.name


# ---------------------------------------------------------------------------------------------
# Headless Chromium: axe-core, and a page that runs nothing

RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                                      example: v.nodes[0].html.slice(0, 160) + ' ' + v.nodes[0].failureSummary.slice(0, 200)}));
}"""


def axe_violations(browser, path: Path) -> list[dict]:  # noqa: F811
    """axe-core's violations on one page at WCAG 2.0-2.2 A/AA and best practice."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: `npm ci --prefix .ci/axe` (run by .ci/run) installs the pinned axe-core")
    page = browser.new_page(bypass_csp=True)  # the handout's own policy refuses every script, axe's too
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.add_script_tag(path=str(AXE))
        return page.evaluate(RUN_AXE, AXE_TAGS)
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_axe_finds_no_violation_in_any_handout(browser, course_handouts):  # noqa: F811
    paths, _ = course_handouts
    assert len(paths) == 2 * len(load_course().select_editions(None))
    found = {path.name: axe_violations(browser, path) for path in paths}
    print("axe violations: " + ", ".join(f"{name}: {sum(v['nodes'] for v in found[name])}" for name in found))
    assert {name: v for name, v in found.items() if v} == {}


@pytest.mark.browser
def test_axe_sees_a_contrast_failure(browser, tmp_path):  # noqa: F811
    """The harness can fail: the old accent on the contents background is reported."""
    page = tmp_path / "weak.html"
    page.write_text('<!DOCTYPE html><html lang="en"><head><title>t</title></head><body><main>'
                    '<h1>t</h1><p style="background:#ECEFF4"><a href="#x" style="color:#5E81AC">weak link</a></p></main></body></html>')
    assert [v["id"] for v in axe_violations(browser, page)] == ["color-contrast"]


SCRIPTS_AND_REQUESTS = """() => ({
  scripts: document.scripts.length,
  handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
  scriptUrls: [...document.querySelectorAll('[href],[src],[action],[formaction]')]
    .filter(e => /^\\s*(javascript|vbscript):/i.test(e.getAttribute('href') || e.getAttribute('src') || '')).length,
})"""


def run_and_count(browser, path: Path) -> dict:  # noqa: F811
    """Open ``path`` with every other request blocked: requests tried, scripts compiled by the page, dialogs opened."""
    context = browser.new_context()
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    compiled, requested, dialogs = [], [], []
    # A script of the page has the page's URL; Playwright's own helpers have none.
    cdp.on("Debugger.scriptParsed", lambda event: compiled.append(event["url"]) if event.get("url") else None)
    cdp.send("Debugger.enable")
    own = path.resolve().as_uri()
    page.route("**/*", lambda route: route.continue_() if route.request.url in (own,) or route.request.url.startswith("data:") else route.abort())
    page.on("request", lambda request: requested.append(request.url))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(own, wait_until="load")
    page.wait_for_timeout(300)
    seen = {"compiled": list(compiled), "foreign": [u for u in requested if u != own and not u.startswith("data:")], "dialogs": dialogs}
    seen.update(page.evaluate(SCRIPTS_AND_REQUESTS))
    context.close()
    return seen


@pytest.mark.browser
@pytest.mark.slow
def test_handouts_request_nothing_and_run_nothing(browser, course_handouts):  # noqa: F811
    for path in course_handouts[0]:
        seen = run_and_count(browser, path)
        assert seen == {"compiled": [], "foreign": [], "dialogs": [], "scripts": 0, "handlers": 0, "scriptUrls": 0}, (path.name, seen)


@pytest.mark.browser
def test_the_harness_sees_what_the_audit_refuses(browser, tmp_path):  # noqa: F811
    """The payloads the audit refuses do fetch and run in Chromium, so a zero above means something."""
    page = tmp_path / "payloads.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta http-equiv=\"refresh\" content=\"5;url=http://example.invalid/refresh\"></head><body>"
        "<div style=\"width:10px;height:10px;background-image:image-set('http://example.invalid/set.png' 1x)\"></div>"
        "<svg><image href=\"http://example.invalid/svg.png\" width=\"10\" height=\"10\"/></svg>"
        "<img alt=\"x\" src=\"data:,\" onerror=\"alert('handler')\"></body></html>")
    seen = run_and_count(browser, page)
    assert "http://example.invalid/set.png" in seen["foreign"] and "http://example.invalid/svg.png" in seen["foreign"]
    assert seen["handlers"] == 1 and seen["compiled"] and seen["dialogs"] == ["handler"]


def page_with_slipped_payloads(tmp_path, policy: bool) -> Path:
    """A real handout with every HTML5 payload of test_html.py put into its body past the audit (its CSP removed unless ``policy``)."""
    from tests.test_html import HTML5_PAYLOADS

    page, _, _ = handout.render(new_notebook(cells=[new_markdown_cell("# A page\n\nText.")]), "slipped", english())
    assert page.count("Content-Security-Policy") == 1
    if not policy:
        page = re.sub(r"<meta[^>]*Content-Security-Policy[^>]*>", "", page)
    body = re.search(r"<body[^>]*>", page).end()
    path = tmp_path / f"slipped-{'with' if policy else 'without'}-policy.html"
    path.write_text(page[:body] + "".join(p[1] for p in HTML5_PAYLOADS) + page[body:], encoding="utf-8")
    return path


def reached_and_ran(browser, path: Path) -> tuple[list[str], list[str]]:  # noqa: F811
    """(the URLs that reached the network layer, the dialogs opened): a request the page's policy blocks never gets there."""
    context = browser.new_context()
    page = context.new_page()
    own, reached, dialogs = path.resolve().as_uri(), [], []

    def route(request_route):
        url = request_route.request.url
        if url == own or url.startswith("data:"):
            request_route.continue_()
        else:
            reached.append(url)
            request_route.abort()

    page.route("**/*", route)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(own, wait_until="load")
    page.wait_for_timeout(300)
    context.close()
    return reached, dialogs


@pytest.mark.browser
def test_the_content_security_policy_stops_what_slips_past_the_audit(browser, tmp_path):  # noqa: F811
    """The payloads the html.parser audit missed fetch and run in Chromium without the page's policy, and do neither with it."""
    reached, dialogs = reached_and_ran(browser, page_with_slipped_payloads(tmp_path, policy=False))
    assert sum("example.invalid/slip" in url for url in reached) >= 8 and len(dialogs) == 4, (reached, dialogs)
    assert reached_and_ran(browser, page_with_slipped_payloads(tmp_path, policy=True)) == ([], [])


@pytest.mark.browser
@pytest.mark.slow
def test_axe_finds_no_violation_in_the_index(browser, course_handouts):  # noqa: F811
    index = course_handouts[0][0].parent / "index.html"
    assert index.exists()
    assert axe_violations(browser, index) == []
    assert run_and_count(browser, index) == {"compiled": [], "foreign": [], "dialogs": [], "scripts": 0, "handlers": 0, "scriptUrls": 0}
