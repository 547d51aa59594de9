"""python -m builder COMMAND: build, check, execute and export the course notebooks.

Add a command with a parser function below and one row in COMMANDS; its body lives in commands.py.
"""

import argparse
import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path

from . import __version__, commands, diagnostics, exits
from .config import ROOT, load_course


def _names(parser: argparse.ArgumentParser, what: str = "notebook names or reference keys (default: all)") -> None:
    parser.add_argument("names", nargs="*", help=what)


def _timing(parser: argparse.ArgumentParser) -> None:
    """--budget and --timeout, for the commands that execute notebooks."""
    parser.add_argument("--budget", type=_positive_seconds, help="fail when a notebook takes longer than this many seconds")
    parser.add_argument("--timeout", type=_positive_int, default=600, help="per-cell timeout in seconds (default: 600)")


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (refused before anything runs)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, got {text}")
    return value


def build_options(p):
    _names(p)
    p.add_argument("--force", action="store_true", help="overwrite regions edited by hand and cells edited only in a .ipynb")
    # Kept so scripts written for the old refusal still run: a unit without a current translation now always keeps its English.


def translations_options(p):
    _names(p)
    p.add_argument("--update", action="store_true", help="merge each catalog with its English source (as msgmerge does) and write it")
    p.add_argument("--typography", action="store_true",
                   help="rewrite every catalog's translations in the language's typography (numbers, units, quotes, no-break spaces); "
                        "code, formulas and URLs stay; nothing is written if a rewrite would change an invariant")


def adopt_options(p):
    _names(p, "notebook names or reference keys whose .ipynb edits to keep (default: all)")


def check_options(p):
    _names(p)
    p.add_argument("--strict-translations", action=argparse.BooleanOptionalAction, default=None,
                   help="fail on units not translated yet (default: [tool.course] translations_strict, else warn)")
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help="derive every edition again, ignoring what build/check-cache.json kept (the record is still refreshed)")


def new_exercise_options(p):
    p.add_argument("name", help="notebook name or reference key")
    p.add_argument("--function", required=True, help="the function students write")
    p.add_argument("--after", required=True, metavar="HEADING", help="the heading (its text, without the #) the exercise follows")
    p.add_argument("--contracts", metavar="MODULE", help="builder/contracts module for the contract stub (default: the one the notebook's exercises use)")


def execute_options(p):
    _names(p)
    _timing(p)
    p.add_argument("--out", type=Path, help="folder for executed copies (default: dist/executed)")
    p.add_argument("--student", action="store_true", help="also run each student edition, as shipped and with its solutions re-inserted")


def html_options(p):
    _names(p)
    _timing(p)
    p.add_argument("--out", type=Path, help="folder for executed copies (default: dist/executed)")
    p.add_argument("--handouts", type=Path, help="folder for the handouts (default: dist/handouts)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--no-input-only", action="store_true", help="write only the reading handouts, without code inputs")
    which.add_argument("--full-only", action="store_true", help="write only the full handouts, with code")


def all_options(p):
    html_options(p)
    p.add_argument("--force", action="store_true", help="overwrite regions edited by hand and cells edited only in a .ipynb")
    students = p.add_mutually_exclusive_group()
    students.add_argument("--student", action="store_true", help="also run each student edition with its solutions re-inserted (it must pass)")
    students.add_argument("--solutions-only", action="store_true", help="execute the solution editions only, not the student editions as shipped")


def refs_options(p):
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="prove the committed bytes reproduce exactly")
    mode.add_argument("--update", action="store_true", help="rewrite the reference files on purpose")


def colab_options(p):
    from .colab import DEFAULT_TORCH, DEFAULT_VENV, TORCH_CPU_INDEX

    _names(p)
    _timing(p)
    p.add_argument("--out", type=Path, help="folder for the executed copies (default: dist/colab)")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help=f"where to create the pinned environment (default: {DEFAULT_VENV})")
    p.add_argument("--python", help="interpreter for the environment (default: python3.13, Colab's, when on PATH, else this one)")
    p.add_argument("--torch", default=DEFAULT_TORCH, help=f"torch requirement, a CPU build (default: {DEFAULT_TORCH})")
    p.add_argument("--torch-index", default=TORCH_CPU_INDEX, help=f"package index for torch (default: PyTorch's CPU index, {TORCH_CPU_INDEX}; '' for PyPI)")


def docs_options(p):
    p.add_argument("--check", action="store_true", help="write nothing; fail when docs/cli.md differs from what the parser says")


# name: (parser function, command body). The body's docstring is the command's help and description.
COMMANDS: dict[str, tuple[Callable, Callable] | str] = {
    "build": (build_options, commands.build),
    "check": (check_options, commands.check),
    "adopt": (adopt_options, commands.adopt),
    "new-exercise": (new_exercise_options, commands.new_exercise),
    "execute": (execute_options, commands.execute),
    "refs": (refs_options, commands.references),
    "translations": (translations_options, commands.translations),
    "html": (html_options, commands.html),
    "all": (all_options, commands.everything),
    "colab": (colab_options, commands.colab),
    "docs": (docs_options, commands.docs),
    "grade": ".grade.cli",  # a module with options() and command(), imported only when that command (or --help) runs
    "stats": ".stats",
    "release": ".release",
}


def command(name: str, commands: dict | None = None) -> tuple[Callable, Callable]:
    """(parser function, command body) of one command; a lazily listed command's module is imported here."""
    entry = (COMMANDS if commands is None else commands)[name]
    if isinstance(entry, str):
        module = importlib.import_module(entry, __package__)
        return module.options, module.command
    return entry


def parser(only: str | None = None, commands: dict | None = None, prog: str = "python -m builder",
           summary: str | None = None) -> argparse.ArgumentParser:
    """The command line: one subcommand per job, each with only the flags it uses.

    With ``only``, every other command gets a bare entry, so ``check`` starts without importing what bench, colab,
    grade or mutants need.
    """
    commands = COMMANDS if commands is None else commands
    top = argparse.ArgumentParser(prog=prog, description=(summary or __doc__).splitlines()[0],
                                  epilog=exits.epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"course builder {__version__}")
    top.add_argument("--root", type=Path, default=None, help="repository root (default: the checkout holding the current folder)")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in commands:
        if only not in (None, name):  # another command's options, some of which import their module, are not needed
            sub.add_parser(name)
            continue
        options, body = command(name, commands)
        text = inspect.cleandoc(body.__doc__ or name)
        options(sub.add_parser(name, help=text.splitlines()[0], description=text, epilog=exits.epilog(name),
                               formatter_class=argparse.RawDescriptionHelpFormatter))
    return top


def parse_args(argv: list[str] | None, commands: dict | None = None, **names) -> argparse.Namespace:
    """Parsed arguments; argparse exits 2 on a usage error. ``names``: ``prog`` and ``summary`` of ``parser``."""
    argv = sys.argv[1:] if argv is None else argv
    commands = COMMANDS if commands is None else commands
    chosen = next((word for before, word in zip([None, *argv], argv) if word in commands and before != "--root"), None)
    only = None if chosen is None or "-h" in argv or "--help" in argv else chosen
    return parser(only, commands, **names).parse_args(argv)


def _argument(action: argparse.Action) -> str:
    """One argument as the reference writes it: ``--flag VALUE``, ``--flag {a,b}`` or ``NAME ...``."""
    if not action.option_strings:
        return f"{action.metavar or action.dest}{' ...' if action.nargs in ('*', '+') else ''}"
    flags = " | ".join(action.option_strings)
    if action.nargs == 0:
        return flags
    value = action.metavar or ("{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper())
    return f"{flags} {value}"


def _usage(name: str, actions: list) -> str:
    """``python -m builder NAME ...`` with optional arguments in brackets."""
    needed = [(a.required if a.option_strings else a.nargs not in ("*", "?")) for a in actions]
    parts = [_argument(a) if must else f"[{_argument(a)}]" for a, must in zip(actions, needed)]
    return " ".join([f"python -m builder {name}", *parts])


def reference() -> str:
    """docs/cli.md: every command with its description, its arguments and its exit codes, read from the parser itself.

    Written from the parser's actions, not argparse's help text, so it reads the same on every Python version.
    """
    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    lines = ["# Command-line reference", "",
             "<!-- Generated from builder/cli.py by `python -m builder docs`; tests/test_readme.py fails when it is stale. -->", "",
             "Every command is `python -m builder COMMAND` (or `course-builder COMMAND`), run from the checkout. Before the command: "
             "`--root DIR` (the repository root; default: the checkout holding the current folder), `--version`, `--help`. "
             "`python -m builder COMMAND --help` prints the same as below for one command.", ""]
    for name, command_parser in sub.choices.items():
        actions = [a for a in command_parser._actions if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS]
        lines += [f"## {name}", "", "```", _usage(name, actions), "```", "", command_parser.description, ""]
        lines += [f"- `{_argument(action)}`: {action.help or ''}" for action in actions]
        lines += ["", "Exit codes: " + ", ".join(f"`{code}`" for code in exits.codes(name)) + " ([meanings](#exit-codes)).", ""]
    lines += ["## Exit codes", "", "| Code | Meaning |", "|---|---|"]
    lines += [f"| `{code}` | {text} |" for code, text in exits.MEANINGS.items()]
    return "\n".join(lines) + "\n"


def find_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` whose pyproject.toml has a [tool.course] table; else this package's checkout."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and "[tool.course]" in candidate.read_text(encoding="utf-8", errors="replace"):
            return folder
    return ROOT


def main(argv: list[str] | None = None, commands: dict | None = None, **names) -> int:
    """Run one builder command (or one of ``commands``, with ``prog`` and ``summary``) and return its exit code."""
    try:
        args = parse_args(argv, commands, **names)
    except SystemExit as exc:  # --help, --version, or a usage error argparse already explained
        return exc.code if isinstance(exc.code, int) else exits.USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exits.INTERRUPTED
    try:
        course = load_course((args.root or find_root(Path.cwd())).resolve())
        return command(args.command, commands)[1](course, args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exits.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a message, never a traceback
        return report(exc)


def report(exc: Exception) -> int:
    """Print one builder error and return its exit code."""
    code = diagnostics.exit_code(exc)
    if code == exits.INTERNAL:
        where = exc.__traceback__
        while where and where.tb_next:
            where = where.tb_next
        at = f" at {where.tb_frame.f_code.co_filename}:{where.tb_lineno}" if where else ""
        print(f"internal error: {type(exc).__name__}: {exc}{at}; please report it", file=sys.stderr)
    elif isinstance(exc, FileNotFoundError) and exc.filename and not Path(exc.filename).parent.exists():
        target = Path(str(exc.filename).removesuffix(".partial"))  # a file written whole or not at all, through NAME.partial
        print(f"error: cannot write {target}: the folder {target.parent} does not exist; create it, or choose another", file=sys.stderr)
    else:
        print(f"error: {exc}", file=sys.stderr)
    return code
