"""Course configuration, read from the ``[tool.course]`` table of ``pyproject.toml``."""

import hashlib
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from . import exits
from .diagnostics import BuilderError

ROOT = Path(__file__).resolve().parent.parent
FIX_COMMAND = "python -m builder build"


class ConfigError(BuilderError, ValueError):
    """The course configuration in pyproject.toml is missing or malformed."""

    exit_code = exits.MALFORMED


# The student edition's title suffix, per language.
STUDENT_EDITION = {"en": "Student edition", "ru": "версия для студента"}


def worded(table: dict[str, str], language: str) -> str:
    """The text of ``language`` in a per-language table, or its English where the table has no entry for it."""
    return table.get(language, table["en"])


class UnknownNotebook(BuilderError, LookupError):
    """A notebook name on the command line that the course does not have (a usage error)."""

    exit_code = exits.USAGE


@dataclass(frozen=True)
class Notebook:
    """One course notebook in one language: its paired files, its reference file and its title.

    The English notebook (``language == "en"``) is the source instructors edit; a translated one is
    generated from it and a catalog, and lives under ``notebooks/<language>/``.
    """

    root: Path
    name: str
    reference: str
    title: str
    language: str = "en"
    titles: tuple[tuple[str, str], ...] = ()  # (language, title) of each translation

    @property
    def folder(self) -> Path:
        """Where this edition's files live: notebooks/, or notebooks/<language>/ for a translation."""
        base = self.root / "notebooks"
        return base if self.language == "en" else base / self.language

    @property
    def edition(self) -> str:
        """A name unique across languages: the notebook name, with ``.<language>`` for a translation."""
        return self.name if self.language == "en" else f"{self.name}.{self.language}"

    @property
    def source(self) -> Path:
        """The jupytext percent source: the file instructors edit (generated for a translation)."""
        return self.folder / f"{self.name}.py"

    @property
    def ipynb(self) -> Path:
        """The paired notebook that Colab opens."""
        return self.folder / f"{self.name}.ipynb"

    @property
    def student_source(self) -> Path:
        """The student edition's percent source, generated from ``source``."""
        return self.folder / "student" / f"{self.name}.py"

    @property
    def student_ipynb(self) -> Path:
        """The student edition Colab opens: exercises as stubs."""
        return self.folder / "student" / f"{self.name}.ipynb"

    @property
    def student_title(self) -> str:
        """Title of the student edition."""
        return f"{self.title} · {STUDENT_EDITION[self.language]}"

    @property
    def catalog(self) -> Path:
        """The gettext catalog of a translation: translations/<language>/<name>.po."""
        return self.root / "translations" / self.language / f"{self.name}.po"

    def translated(self, language: str) -> "Notebook":
        """This notebook's edition in ``language``, with its title from the course config."""
        title = dict(self.titles).get(language)
        if title is None:
            raise ConfigError(f"{self.root / 'pyproject.toml'}(1): notebook {self.name} needs titles.{language} for its {language} edition")
        return replace(self, language=language, title=title)

    @property
    def reference_path(self) -> Path:
        """The frozen reference metrics this notebook embeds."""
        return self.root / "references" / f"{self.reference}.json"

    @property
    def reference_sha256(self) -> str:
        """SHA-256 of the committed reference file's bytes, as the notebook header and handout state it."""
        return hashlib.sha256(self.reference_path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Course:
    """Everything the builder needs to know about the repository it builds."""

    root: Path
    repository: str
    branch: str
    notebooks: tuple[Notebook, ...]
    languages: tuple[str, ...] = ()  # the translations built beside the English notebooks
    translations_strict: bool = False  # untranslated units fail `check` (this course's CI); else they are warnings

    @property
    def translations(self) -> list[Notebook]:
        """Every translated edition of every notebook, in course order."""
        return [nb.translated(lang) for nb in self.notebooks for lang in self.languages]

    def select_editions(self, names: list[str] | None) -> list[Notebook]:
        """The chosen notebooks (as ``select``) followed by their translated editions: what the run commands run."""
        chosen = self.select(names)
        return chosen + [nb.translated(lang) for nb in chosen for lang in self.languages]

    @property
    def executed_dir(self) -> Path:
        """Where ``execute`` leaves the executed copies."""
        return self.root / "dist" / "executed"

    @property
    def handouts_dir(self) -> Path:
        """Where ``html`` writes the handouts."""
        return self.root / "dist" / "handouts"

    @property
    def colab_dir(self) -> Path:
        """Where ``colab`` leaves the copies executed on the Colab-pinned kernel."""
        return self.root / "dist" / "colab"

    def shown(self, path: Path) -> str:
        """``path`` relative to the repository root when it lies inside it, for reports."""
        path = Path(path)
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)

    def colab_url(self, relative_path: str) -> str:
        """Open-in-Colab URL for a notebook path relative to the repository root."""
        slug = self.repository.removeprefix("https://github.com/").strip("/")
        return f"https://colab.research.google.com/github/{slug}/blob/{self.branch}/{relative_path}"

    def select(self, names: list[str] | None) -> list[Notebook]:
        """Notebooks by full name or reference key (``module3``); all of them when names is empty."""
        if not names:
            return list(self.notebooks)
        chosen = []
        for name in names:
            match = [nb for nb in self.notebooks if name in (nb.name, nb.reference)]
            if not match:
                known = ", ".join(nb.name for nb in self.notebooks)
                raise UnknownNotebook(f"unknown notebook {name!r}; choose from: {known}")
            chosen.extend(match)
        return chosen


def load_course(root: Path = ROOT) -> Course:
    """Read ``[tool.course]`` from ``root/pyproject.toml``; ConfigError names ``pyproject.toml(line)``."""
    pyproject = root / "pyproject.toml"
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{pyproject}(1): cannot read it ({exc.strerror or exc}); is {root} a course checkout? Pass --root") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        found = re.search(r"at line (\d+)", str(exc))
        raise ConfigError(f"{pyproject}({found.group(1) if found else 1}): not valid TOML: {exc}") from None
    try:
        table = data["tool"]["course"]
        notebooks = tuple(
            Notebook(root, entry["name"], entry["reference"], entry["title"], titles=tuple(sorted(entry.get("titles", {}).items())))
            for entry in table["notebooks"]
        )
        languages = tuple(table.get("translations", ()))
        strict = table.get("translations_strict", False)
        repository, branch = table["repository"], table["branch"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{pyproject}(1): [tool.course] needs repository, branch and notebooks, each with name, reference and title (missing {exc})") from None
    if not isinstance(repository, str) or not repository.startswith("https://github.com/"):
        raise ConfigError(f"{pyproject}(1): [tool.course] repository must be a https://github.com/OWNER/REPO URL")
    unknown = [lang for lang in languages if lang not in STUDENT_EDITION or lang == "en"]
    if unknown:
        raise ConfigError(f"{pyproject}(1): [tool.course] translations {unknown} are not supported; known: {sorted(set(STUDENT_EDITION) - {'en'})}")
    if not isinstance(strict, bool):
        raise ConfigError(f"{pyproject}(1): [tool.course] translations_strict must be true or false, got {strict!r}")
    return Course(root, repository, branch, notebooks, languages, strict)
