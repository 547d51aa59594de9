"""Course configuration, read from the ``[tool.course]`` table of ``pyproject.toml``."""

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX_COMMAND = "python -m builder build"
REFS_UPDATE_COMMAND = "python -m builder refs --update"


class ConfigError(ValueError):
    """The course configuration in pyproject.toml is missing or malformed."""


class UnknownNotebook(LookupError):
    """A notebook name on the command line that the course does not have (a usage error)."""


@dataclass(frozen=True)
class Notebook:
    """One course notebook: its paired files, its reference file and its title."""

    root: Path
    name: str
    reference: str
    title: str

    @property
    def source(self) -> Path:
        """The jupytext percent source, the file instructors edit."""
        return self.root / "notebooks" / f"{self.name}.py"

    @property
    def ipynb(self) -> Path:
        """The paired notebook that Colab opens."""
        return self.root / "notebooks" / f"{self.name}.ipynb"

    @property
    def student_source(self) -> Path:
        """The student edition's percent source, generated from ``source``."""
        return self.root / "notebooks" / "student" / f"{self.name}.py"

    @property
    def student_ipynb(self) -> Path:
        """The student edition Colab opens: exercises as stubs."""
        return self.root / "notebooks" / "student" / f"{self.name}.ipynb"

    @property
    def student_title(self) -> str:
        """Title of the student edition."""
        return f"{self.title} · Student edition"

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
            Notebook(root, entry["name"], entry["reference"], entry["title"])
            for entry in table["notebooks"]
        )
        repository, branch = table["repository"], table["branch"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{pyproject}(1): [tool.course] needs repository, branch and notebooks, each with name, reference and title (missing {exc})") from None
    if not isinstance(repository, str) or not repository.startswith("https://github.com/"):
        raise ConfigError(f"{pyproject}(1): [tool.course] repository must be a https://github.com/OWNER/REPO URL")
    return Course(root, repository, branch, notebooks)
