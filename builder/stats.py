"""``python -m builder stats``: how much of the code a student sees is lesson, and how much is machinery.

A cell is *hidden* when it opens collapsed (Colab's ``cellView: form`` or Jupyter's
``jupyter.source_hidden``, which ``build`` sets on every cell tagged ``hide-input``). Every other code
cell is *visible*, and its non-blank lines are the *visible code lines*. A visible line is
*machinery* when it belongs to one of these (``machinery_lines`` decides, line by line):

- an inlined region (``# builder:begin inline NAME`` ... ``# builder:end``): contract checks and toolkit helpers;
- a top-level function or class whose name starts with ``_``: a private helper;
- a plot or diagram function: a top-level function that uses ``plt``, ``matplotlib``, ``show_figure``
  or ``apply_plot_style``;
- a check: a statement that calls ``expect``, ``expect_close``, ``expect_raises``, any ``check_*``
  function or a ``.check`` method (``REFERENCE.check``), and a loop made only of checks; the cell's
  first check counts too (issue 35 dropped that exemption);
- an argument guard: a statement ``if ...: raise ...`` or a call of a ``require_*`` validator, in a
  function body or at the top of a cell, the first one included;
- a figure call with its caption: a statement that calls ``show_figure`` or a ``plot_*``/``draw_*`` function.

The target of issue 22 holds an edition to at most ``MAX_SHARE`` machinery and at most ``MAX_VISIBLE``
visible code lines.
"""

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .cells import collapsed

MAX_SHARE = 0.20
MAX_VISIBLE = 1500
PLOT_NAMES = frozenset({"plt", "matplotlib", "show_figure", "apply_plot_style"})
CHECK_PREFIXES = ("expect", "check_")
FIGURE_PREFIXES = ("show_figure", "plot_", "draw_")
_BEGIN_INLINE = re.compile(r"^\s*# builder:begin inline ")
_END = re.compile(r"^\s*# builder:end\b")


@dataclass(frozen=True)
class Stats:
    """One edition's figures: visible code lines and how many of them are machinery."""

    edition: str
    visible: int
    machinery: int

    @property
    def share(self) -> float:
        """Machinery as a fraction of the visible code lines."""
        return self.machinery / self.visible if self.visible else 0.0

    @property
    def meets_target(self) -> bool:
        """Both figures within issue 22's target."""
        return self.share <= MAX_SHARE and self.visible <= MAX_VISIBLE

    def row(self) -> str:
        """One line of the stats table."""
        verdict = "meets the target" if self.meets_target else "over the target"
        return f"{self.edition:<48} {self.visible:>6} {self.machinery:>6} {self.share:>7.1%}  {verdict}"


def _span(node: ast.stmt) -> range:
    """The 1-based line numbers of a statement, decorators included."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    if node.end_lineno is None:  # ast.parse sets it on every statement
        raise ValueError(f"the statement at line {node.lineno} has no end line")
    return range(first, node.end_lineno + 1)


def _called(node: ast.AST) -> str:
    """The name a statement calls (``f(...)``, ``x = f(...)``, ``with f(...)``, ``obj.f(...)`` as ``obj.f``), or ''."""
    call: ast.AST | None = node
    if isinstance(node, ast.With) and node.items:
        call = node.items[0].context_expr
    elif isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)):
        call = node.value
    if not isinstance(call, ast.Call):
        return ""
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        return f"{call.func.value.id}.{call.func.attr}"
    return ""


def _is_check(node: ast.AST) -> bool:
    """A check statement, or a loop whose body is nothing but checks."""
    if isinstance(node, (ast.For, ast.While)):
        return all(_is_check(n) for n in node.body)
    name = _called(node)
    return name.startswith(CHECK_PREFIXES) or name.endswith(".check")


def _is_figure(node: ast.AST) -> bool:
    """A figure call with its caption: ``show_figure(...)`` or a ``plot_*``/``draw_*`` call."""
    return _called(node).startswith(FIGURE_PREFIXES)


def _is_guard(node: ast.AST) -> bool:
    """An argument guard: ``if ...: raise ...`` (no else) or a call of a ``require_*`` validator."""
    if isinstance(node, ast.If):
        return not node.orelse and len(node.body) == 1 and isinstance(node.body[0], ast.Raise)
    return _called(node).startswith("require_")


def _functions(tree: ast.Module):
    """Every function a cell defines at top level or as a method of a top-level class."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _guard_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    """Every guard line of one function's body."""
    return {line for node in function.body if _is_guard(node) for line in _span(node)}


def machinery_lines(source: str) -> set[int]:
    """The 1-based numbers of the machinery lines of one visible code cell (blank lines included)."""
    lines = source.splitlines()
    found: set[int] = set()
    inside = False
    for number, line in enumerate(lines, start=1):
        inside = inside or bool(_BEGIN_INLINE.match(line))
        if inside:
            found.add(number)
        inside = inside and not _END.match(line)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found  # IPython syntax (%magic, !shell): only its regions are known
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if node.name.startswith("_") or (not isinstance(node, ast.ClassDef) and used & PLOT_NAMES):
                found.update(_span(node))
        elif _is_check(node) or _is_guard(node) or _is_figure(node):
            found.update(_span(node))
    for function in _functions(tree):
        found.update(_guard_lines(function))
    return found


def notebook_stats(edition: str, nb: dict) -> Stats:
    """The figures of one notebook (parsed .ipynb JSON)."""
    visible = machinery = 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code" or collapsed(cell):
            continue
        source = "".join(cell.get("source", ""))
        lines = source.splitlines()
        marked = machinery_lines(source)
        visible += sum(1 for line in lines if line.strip())
        machinery += sum(1 for number, line in enumerate(lines, start=1) if line.strip() and number in marked)
    return Stats(edition, visible, machinery)


def editions(course) -> list[tuple[str, Path]]:
    """(edition name, .ipynb) of every committed edition: solution and student, every language."""
    found = []
    for nb in course.notebooks + tuple(course.translations):
        found += [(nb.edition, nb.ipynb), (f"{nb.edition} student", nb.student_ipynb)]
    return found


def course_stats(course) -> list[Stats]:
    """The figures of every committed edition, in course order."""
    return [notebook_stats(name, json.loads(path.read_text(encoding="utf-8"))) for name, path in editions(course)]


def table(rows: list[Stats]) -> str:
    """The stats table that ``python -m builder stats`` prints."""
    head = f"{'edition':<48} {'visible':>6} {'machin.':>6} {'share':>7}  target: share <= {MAX_SHARE:.0%}, visible <= {MAX_VISIBLE}"
    return "\n".join([head] + [r.row() for r in rows])


def read_baseline(path: Path) -> dict[str, Stats]:
    """The committed figures the stats test holds every edition to (``--write-baseline`` writes them)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: Stats(name, row["visible"], row["machinery"]) for name, row in data.items()}


def baseline_text(rows: list[Stats]) -> str:
    """The baseline file's text for ``rows``: one entry per edition, sorted, with a final newline."""
    return json.dumps({r.edition: {"visible": r.visible, "machinery": r.machinery} for r in rows}, indent=2, sort_keys=True) + "\n"


def options(p) -> None:
    """The flags of ``stats``."""
    p.add_argument("--write-baseline", type=Path, metavar="FILE",
                   help="also write the figures to FILE (tests/stats_baseline.json is the one the stats test ratchets on)")


def command(course, args) -> int:
    """Print each edition's visible code lines and machinery share, against the lean target (a fifth at most, 1500 lines).

    Machinery is defined line by line in builder/stats.py and the README. Exit 0.
    """
    rows = course_stats(course)
    print(table(rows))
    if args.write_baseline:
        args.write_baseline.write_text(baseline_text(rows), encoding="utf-8")
        print(f"wrote {args.write_baseline}")
    return 0
