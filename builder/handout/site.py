"""The handouts as a small offline site: ``index.html`` lists every module in every language with its summary,
its study time and links to its full and reading handouts. Like a handout, it runs no script and fetches nothing."""

import html
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup

from .errors import HandoutError
from .exporter import SUFFIX, VARIANTS
from .page import CSP, PARSER, audit
from .words import furniture

INDEX = "index.html"

STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; color: #1B1F24; background: #FFFFFF; max-width: 60rem; margin: 0 auto; padding: 1rem; }
a { color: #0B5CAD; }
table { border-collapse: collapse; width: 100%; margin-bottom: 2rem; }
caption { text-align: left; font-weight: bold; font-size: 1.2rem; padding: 0.5rem 0; }
th, td { border-bottom: 1px solid #6B7280; padding: 0.5rem; text-align: left; vertical-align: top; }
.missing { color: #4B5563; }
@media print { a::after { content: " (" attr(href) ")"; } }
"""


@dataclass(frozen=True)
class Entry:
    """One module in one language, as the index lists it."""

    edition: str
    language: str
    title: str
    summary: str
    hours: float


def module_facts(course) -> dict[str, dict]:
    """Each notebook's ``summary``, ``summaries`` and ``hours`` from ``[[tool.course.notebooks]]`` in pyproject.toml."""
    pyproject = course.root / "pyproject.toml"
    entries = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["course"]["notebooks"]
    facts = {}
    for entry in entries:
        missing = [key for key in ("summary", "hours") if key not in entry]
        if missing:
            raise HandoutError(f"{course.shown(pyproject)}: notebook {entry['name']} needs {' and '.join(missing)} for the "
                               "handouts' index (a one-sentence summary and the study time in hours)")
        facts[entry["name"]] = entry
    return facts


def entries(course) -> list[Entry]:
    """Every module in English, then in each translation, in the course's order."""
    facts = module_facts(course)
    found = []
    for language in ("en", *course.languages):
        for nb in course.notebooks:
            edition = nb if language == "en" else nb.translated(language)
            fact = facts[nb.name]
            summary = fact["summary"] if language == "en" else fact.get("summaries", {}).get(language)
            if summary is None:
                raise HandoutError(f"{course.shown(course.root / 'pyproject.toml')}: notebook {nb.name} needs summaries.{language} "
                                   "for the handouts' index")
            found.append(Entry(edition.edition, language, edition.title, summary, float(fact["hours"])))
    return found


def _hours(value: float) -> str:
    return f"{value:g}"


def _table(language: str, rows: list[Entry], out_dir: Path) -> str:
    """One language's modules as a table: title, summary, time, links to the handouts that exist in ``out_dir``."""
    words = furniture(language)
    body = []
    for entry in rows:
        links = []
        for variant in VARIANTS:
            name = f"{entry.edition}{SUFFIX[variant]}"
            label = html.escape(words["full_link" if variant == "full" else "reading_link"])
            if (out_dir / name).exists():
                links.append(f'<a href="{html.escape(name, quote=True)}">{label}</a>')
            else:
                links.append(f'<span class="missing">{label}: <code>python -m builder html {html.escape(entry.edition.split(".")[0])}</code></span>')
        body.append(f"<tr><th scope=\"row\">{html.escape(entry.title)}</th><td>{html.escape(entry.summary)}</td>"
                    f"<td>{html.escape(words['hours'].format(hours=_hours(entry.hours)))}</td><td>{'<br>'.join(links)}</td></tr>")
    return (f'<table lang="{language}"><caption>{html.escape(words["language_name"])}</caption>'
            f'<thead><tr><th scope="col">{html.escape(words["module"])}</th><th scope="col">{html.escape(words["summary"])}</th>'
            f'<th scope="col">{html.escape(words["time"])}</th><th scope="col">{html.escape(words["handout"])}</th></tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def index_page(course, out_dir: Path) -> str:
    """The index page's HTML; HandoutError if it would fetch or run anything (the handouts' audit)."""
    words = furniture("en")
    found = entries(course)
    tables = "".join(_table(language, [e for e in found if e.language == language], out_dir)
                     for language in dict.fromkeys(e.language for e in found))
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
            f"<title>{html.escape(words['index_title'])}</title><style>{STYLE}</style></head>"
            f"<body><main><h1>{html.escape(words['index_title'])}</h1><p>{html.escape(words['index_intro'])}</p>"
            f"<p lang=\"ru\">{html.escape(furniture('ru')['index_intro'])}</p>{tables}"
            f"<p>{html.escape(words['licence'])}: {html.escape(words['licence_terms'])}.</p></main></body></html>\n")
    problems = audit(BeautifulSoup(page, PARSER))
    if problems:
        raise HandoutError(f"{INDEX}: the index would not be self-contained:\n  " + "\n  ".join(problems))
    return page


def write_index(course, out_dir: Path) -> Path:
    """Write ``index.html`` into ``out_dir``, linking every handout there; return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / INDEX
    target.write_text(index_page(course, out_dir), encoding="utf-8")
    return target
