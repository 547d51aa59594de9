"""The front door: the README a newcomer reads in minutes, the docs by audience, the licences, and every link.

The README's module tables follow the course config (every edition has its Colab badge, every module its time); its
verified runtime is colab.RUNTIME; everything else lives in docs/, whose relative links must resolve.
"""

import re
import tomllib
import urllib.error
import urllib.request
import warnings

import pytest

from builder import __version__, colab
from builder.config import load_course
from tests.support import ROOT

LINK = re.compile(r"https://colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/(notebooks/[\w/.-]+\.ipynb)")
README_LIMIT = 10_000  # characters: a newcomer reads it in minutes
DOCS = ("students", "instructors", "translators", "contributors", "cli")
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
EXTERNAL = re.compile(r"https?://[^\s)\"'<>`\]]+")


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_notebook_edition_has_a_colab_badge_and_every_badge_a_notebook():
    course = load_course(ROOT)
    linked = set(LINK.findall(readme()))
    editions = course.notebooks + tuple(course.translations)
    expected = {str(path.relative_to(ROOT)) for nb in editions for path in (nb.ipynb, nb.student_ipynb)}
    assert expected - linked == set(), f"README lacks a Colab badge for {sorted(expected - linked)}"
    assert linked - expected == set(), f"README links notebooks the course config does not list: {sorted(linked - expected)}"


def test_the_readme_is_a_front_page_a_newcomer_reads_in_minutes():
    text = readme()
    assert len(text) <= README_LIMIT, f"README.md has {len(text)} characters, over {README_LIMIT}: move the detail to docs/"
    assert "**Prerequisites.**" in text and "python3 -m venv .venv" in text
    for heading in ("## The modules", "## Run it on your machine", "## Documentation", "## Licence, citation, contact"):
        assert heading in text, heading
    assert re.search(r"python -m pip install \"torch==[\d.]+\+cpu\" --index-url https://download\.pytorch\.org/whl/cpu", text)
    assert re.search(r"python -m pip install \"torch==[\d.]+\"  # macOS", text), "the macOS torch line (no +cpu label there)"


def module_facts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["course"]["notebooks"]


def test_the_readme_states_each_modules_time_from_the_course_config_in_both_languages():
    text = readme()
    for entry in module_facts():
        hours = f"{entry['hours']:g}"
        row = next(line for line in text.splitlines() if line.startswith("| ") and entry["title"].split(" · ")[1] in line)
        assert f"about {hours} h" in row, (entry["name"], row[:120])
        ru_title = entry["titles"]["ru"].split(" · ")[1]
        ru_row = next(line for line in text.splitlines() if line.startswith("| ") and ru_title in line)
        assert f"около {hours.replace('.', ',')} ч" in ru_row, (entry["name"], ru_row[:120])


def test_each_modules_time_is_near_the_estimate_from_its_source():
    """hours in pyproject.toml: about 120 words a minute of prose plus 15 minutes an exercise, within a third."""
    import jupytext

    for entry in module_facts():
        nb = jupytext.read(ROOT / "notebooks" / f"{entry['name']}.py")
        words = sum(len(re.findall(r"[^\W\d_]+", c.source)) for c in nb.cells if c.cell_type == "markdown")
        exercises = sum(1 for c in nb.cells if c.cell_type == "code" and "exercise" in c.metadata.get("tags", []))
        estimate = (words / 120 + 15 * exercises) / 60
        assert abs(entry["hours"] - estimate) <= estimate / 3, (entry["name"], entry["hours"], round(estimate, 2))


def test_the_readme_names_the_verified_colab_runtime_as_the_canary_pins_it():
    text = readme()
    runtime = colab.RUNTIME
    for name in ("python", "numpy", "matplotlib", "ipykernel", "ipywidgets"):
        assert runtime[name] in text, name
    assert f"torch {runtime['torch']}+cpu" in text and "IPython " + runtime["ipython"] in text
    assert runtime["source"] in text


def test_docs_exist_for_every_audience_and_the_readme_links_each():
    text = readme()
    for page in DOCS:
        assert (ROOT / "docs" / f"{page}.md").is_file(), page
        assert f"(docs/{page}.md)" in text, page


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def markdown_files():
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_of_the_readme_and_docs_resolves_to_a_file_and_heading():
    for path in markdown_files():
        for target in MARKDOWN_LINK.findall(path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            assert linked.exists(), f"{path.relative_to(ROOT)}: {target}"
            if anchor and linked.suffix == ".md":
                headings = [github_anchor(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)]
                assert anchor in headings, f"{path.relative_to(ROOT)}: {target} (headings: {headings})"


def test_the_licences_citation_and_contributing_guide_are_at_the_root():
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    content = (ROOT / "LICENSE-CONTENT").read_text(encoding="utf-8")
    assert "Attribution-ShareAlike 4.0 International Public License" in content and "Section 8" in content
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and set(project["license-files"]) == {"LICENSE", "LICENSE-CONTENT"}
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version: 1.2.0" in citation and f'version: "{__version__}"' in citation
    assert "CC-BY-SA-4.0" in citation and "MIT" in citation
    assert "docs/contributors.md" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_every_edition_names_its_licence():
    """The header the builder writes into every edition says under which licences it may be shared."""
    course = load_course(ROOT)
    for nb in course.notebooks + tuple(course.translations):
        for path in (nb.source, nb.student_source):
            header = path.read_text(encoding="utf-8").split("builder:end", 1)[0]
            assert "CC BY-SA 4.0" in header and "MIT" in header, path


def external_links() -> list[str]:
    """Every http(s) link of the README, docs/ and the English notebook sources (the translations share them)."""
    texts = [p.read_text(encoding="utf-8") for p in markdown_files()]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "notebooks").glob("*.py"))]
    found = {url.rstrip(".,;:*_") for text in texts for url in EXTERNAL.findall(text)}
    return sorted(u for u in found if "example.invalid" not in u and "{" not in u)


def test_the_link_check_finds_the_links():
    links = external_links()
    assert any("colab.research.google.com" in u for u in links) and any("arxiv.org" in u for u in links), links[:20]


@pytest.mark.network
@pytest.mark.parametrize("url", external_links())
def test_an_external_link_resolves(url):
    """Fetched once a week (the weekly workflow): gone (404, 410) or unreachable fails; a site refusing robots only warns."""
    request = urllib.request.Request(url, headers={"User-Agent": "Mozilla/5.0 (course link check)"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status < 400, (url, response.status)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403, 405, 429, 999):  # the page is there; the site will not serve a script
            warnings.warn(f"{url}: HTTP {exc.code}, not checked")
            return
        pytest.fail(f"{url}: HTTP {exc.code}")
    except (urllib.error.URLError, TimeoutError) as exc:
        pytest.fail(f"{url}: {exc}")
