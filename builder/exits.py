"""The builder's exit codes: the one place that defines them (each command's --help and docs/cli.md list them)."""

OK = 0
FAILED = 1  # a check found drift, a notebook failed or ran over budget, a benchmark missed its target
USAGE = 2  # a bad command line: unknown command, flag or notebook name, a bad value
MALFORMED = 3  # a source, reference file or configuration the builder cannot read or render
HAND_EDIT = 4  # build refuses to overwrite a generated region edited by hand, or a source saved while it ran
IPYNB_EDIT = 5  # build refuses to overwrite cells edited only in a .ipynb; `adopt` moves them into the .py
INTERNAL = 70  # a bug in the builder (EX_SOFTWARE); the message asks for a report
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it

MEANINGS = {
    OK: "success",
    FAILED: "a check found problems, a notebook failed or ran over budget, a benchmark missed its target, or a folder is not writable",
    USAGE: "bad command line (unknown command, flag or notebook name, or a bad value)",
    MALFORMED: "a source, reference file or pyproject.toml [tool.course] that cannot be read or rendered",
    HAND_EDIT: "build refused to overwrite a region edited by hand (rerun with --force after moving the edit), or a source saved while it ran (rerun)",
    IPYNB_EDIT: "build refused to overwrite cells edited only in a .ipynb (`python -m builder adopt NAME` keeps them) or a generated file edited by hand",
    INTERNAL: "a bug in the builder; please report it with the message",
    INTERRUPTED: "interrupted (Ctrl-C): every file is as it was or fully written",
}
# The commands that run a build, and so may refuse with HAND_EDIT or IPYNB_EDIT; every other command never does.
BUILDING = ("build", "adopt", "new-exercise", "all")


def codes(command: str | None = None) -> dict[int, str]:
    """The exit codes ``command`` can return (all of them for the top level, None), with their meanings."""
    if command is None or command in BUILDING:
        return dict(MEANINGS)
    return {code: text for code, text in MEANINGS.items() if code not in (HAND_EDIT, IPYNB_EDIT)}


def epilog(command: str | None = None) -> str:
    """The exit codes of ``command`` (of every command, for None) as lines for ``--help``."""
    return "exit codes:\n" + "\n".join(f"  {code:<3} {text}" for code, text in codes(command).items())
