"""``python -m builder <command>``: build, check, execute and export the course notebooks."""

import argparse
import sys
import tempfile
from pathlib import Path

import nbformat

from . import __version__, colab, execute, html, notebooks, pairing, refs, regions, student
from .config import ROOT, ConfigError, load_course
from .inline import InlineError
from . import mutants

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_MALFORMED, EXIT_HAND_EDIT = 0, 1, 2, 3, 4


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line: one subcommand per job."""
    parser = argparse.ArgumentParser(prog="python -m builder", description=__doc__)
    parser.add_argument("--version", action="version", version=f"course builder {__version__}")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="refresh inlined regions and embedded references, then re-pair the .ipynb")
    build.add_argument("--force", action="store_true", help="overwrite regions that were edited by hand")
    sub.add_parser("check", help="write nothing; fail on stale or hand-edited regions, unpaired notebooks, or references that do not reproduce")
    run = sub.add_parser("execute", help="run notebooks alone in an empty folder through nbclient")
    _execution_options(run)
    ref = sub.add_parser("refs", help="recompute the reference metrics")
    mode = ref.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="prove the committed bytes reproduce exactly")
    mode.add_argument("--update", action="store_true", help="rewrite the reference files on purpose")
    handouts = sub.add_parser("html", help="execute notebooks and export offline HTML handouts to dist/handouts")
    _execution_options(handouts)
    html.add_options(handouts)
    everything = sub.add_parser("all", help="build, check, execute and export the HTML handouts")
    _execution_options(everything)
    pinned = sub.add_parser("colab", help="execute notebooks in a venv pinned to Colab's stack (ipykernel 6.17.1, IPython 7.34.0, numpy 2.0)")
    _execution_options(pinned)
    pinned.add_argument("--venv", type=Path, default=Path(".colab-venv"), help="where to create the pinned environment")
    pinned.add_argument("--python", default=sys.executable, help="interpreter for the environment (Colab: 3.12)")
    pinned.add_argument("--torch", default=colab.DEFAULT_TORCH, help="torch requirement (CPU build)")
    pinned.add_argument("--torch-index", help="package index for torch, e.g. https://download.pytorch.org/whl/cpu")
    bench = sub.add_parser("bench", help="benchmarks reported as ratios: `speed` (notebook vs floor), `tiled` (Module 5)")
    bench.add_argument("what", choices=sorted(BENCHES), help="which benchmark to run")
    bench.add_argument("names", nargs="*", help="notebook names or reference keys (speed only; default: all)")
    bench.add_argument("--repeats", type=int, default=3, help="runs of each measurement (speed: medians, tiled: the fastest)")
    mutants.add_parser(sub)
    return parser.parse_args(argv)


def _execution_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by the commands that execute notebooks."""
    parser.add_argument("names", nargs="*", help="notebook names or reference keys (default: all)")
    parser.add_argument("--budget", type=float, help="fail when a notebook takes longer than this many seconds")
    parser.add_argument("--timeout", type=int, default=600, help="per-cell timeout in seconds")
    parser.add_argument("--out", type=Path, help="folder for executed copies (default: dist/executed)")
    parser.add_argument("--student", action="store_true", help="also run each student edition, as shipped and with its solutions re-inserted")


def main(argv: list[str] | None = None) -> int:
    """Run one builder command and return its exit code."""
    args = parse_args(argv)
    try:
        course = load_course(args.root)
        return COMMANDS[args.command](course, args)
    except (regions.RegionError, InlineError, ConfigError, student.ExerciseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MALFORMED
    except notebooks.HandEditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_HAND_EDIT


def cmd_build(course, args) -> int:
    """Rewrite every region and paired notebook that is out of date."""
    for nb in course.notebooks:
        changed = notebooks.build_one(course, nb, nb.source, nb.ipynb, force=getattr(args, "force", False))
        for path in changed + notebooks.build_student(course, nb):
            print(f"wrote {notebooks.relative(course, path)}")
    print("build: up to date")
    return EXIT_OK


def cmd_check(course, args) -> int:
    """Report every drift without writing anything."""
    findings: list[object] = []
    for nb in course.notebooks:
        findings += notebooks.source_findings(course, nb, nb.source)
        findings += notebooks.pair_findings(course, nb.source, nb.ipynb)
        findings += notebooks.student_findings(course, nb)
    findings += reference_problems(course)
    for finding in findings:
        print(finding)
        if getattr(finding, "diff", ""):
            print(finding.diff)
    if findings:
        print(f"check: {len(findings)} problem(s); `python -m builder build` fixes stale regions and pairs", file=sys.stderr)
        return EXIT_FAILED
    print(f"check: {len(course.notebooks)} notebooks, their student editions, regions, pairs and references are in sync")
    return EXIT_OK


def reference_problems(course) -> list[refs.Problem]:
    """Problems with the committed reference files of every notebook."""
    return [p for nb in course.notebooks for p in refs.check(nb.reference_path, nb.reference)]


def cmd_refs(course, args) -> int:
    """Check or rewrite the reference files."""
    if args.update:
        for nb in course.notebooks:
            changed = refs.update(nb.reference_path, nb.reference)
            print(f"{'wrote' if changed else 'unchanged'} {notebooks.relative(course, nb.reference_path)}")
        print("now run `python -m builder build` so the notebooks embed the new references")
        return EXIT_OK
    problems = reference_problems(course)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"refs: {len(course.notebooks)} reference files reproduce byte for byte")
    return EXIT_FAILED if problems else EXIT_OK


def cmd_execute(course, args, *, kernel_name: str = "python3", out: Path | None = None, student_too: bool = False) -> int:
    """Execute the chosen notebooks and report their times; fail on an error or a breached budget."""
    out = args.out or out or course.root / "dist" / "executed"
    status = EXIT_OK
    for nb in course.select(args.names):
        result = execute.run(nb.ipynb, out, timeout=args.timeout, kernel_name=kernel_name)
        print(execute.report(result, args.budget), flush=True)
        over = args.budget is not None and result.seconds > args.budget
        failed = bool(result.error) or over
        if student_too or getattr(args, "student", False):
            failed |= not run_student_editions(nb, out / "student", args.timeout, kernel_name)
        status = EXIT_FAILED if failed else status
    return status


def run_student_editions(nb, out: Path, timeout: int, kernel_name: str) -> bool:
    """Run a student edition as shipped and with its solutions re-inserted; True when both behave."""
    source = nb.source.read_text(encoding="utf-8")
    labels = [e.label for e in student.exercises(pairing.read_source(source))]
    shipped = execute.run(nb.student_ipynb, out, timeout=timeout, kernel_name=kernel_name, allow_errors=True)
    problems = student.shipped_run_problems(nbformat.read(shipped.executed, as_version=4), labels)
    verdict = "; ".join(problems) or f"stops only at its {len(labels)} exercise stubs (NotImplementedError)"
    print(f"{nb.name} student edition as shipped ({shipped.seconds:.1f} s): {verdict}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        solved = Path(tmp) / f"{nb.name}.ipynb"
        solved.write_text(pairing.to_ipynb(student.reinsert_solutions(nb.student_source.read_text(encoding="utf-8"), source)))
        result = execute.run(solved, timeout=timeout, kernel_name=kernel_name)
    print(f"{nb.name} student edition with solutions re-inserted ({result.seconds:.1f} s): {'FAILED' if result.error else 'passes'}", flush=True)
    if result.error:
        print(result.error)
    return not problems and not result.error


def cmd_colab(course, args) -> int:
    """Create the Colab-pinned environment if needed, then execute the notebooks with its kernel."""
    venv = args.venv if args.venv.is_absolute() else course.root / args.venv
    versions = colab.create(venv, python=args.python, torch=args.torch, torch_index=args.torch_index)
    print("colab-pinned kernel: " + ", ".join(f"{k} {v}" for k, v in versions.items()), flush=True)
    return cmd_execute(course, args, kernel_name=colab.use_kernel(venv), out=course.root / "dist" / "colab", student_too=True)


def cmd_html(course, args) -> int:
    """Execute the chosen notebooks and write their full and reading handouts."""
    return html.command(course, args, execute_first=True)


def cmd_html_from_executed(course, args) -> int:
    """Write the handouts from the copies that ``execute`` just left in its output folder."""
    return html.command(course, args, execute_first=False)


def cmd_all(course, args) -> int:
    """The main job: build, check, execute, then export the handouts."""
    for step in (cmd_build, cmd_check, cmd_execute, cmd_html_from_executed):
        code = step(course, args)
        if code != EXIT_OK:
            return code
    return EXIT_OK


def cmd_bench(course, args) -> int:
    """Run one benchmark from builder/bench.py; fail when a result is over its budget."""
    from . import bench

    try:
        results = getattr(bench, BENCHES[args.what])(course, args.names, repeats=args.repeats)
    except ValueError as exc:  # bad names or repeats: say what is allowed
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK if all(bench.within_budget(r) for r in results) else EXIT_FAILED


# `bench WHAT` runs builder.bench.<function>(course, names, repeats=...); add a benchmark with one line here.
BENCHES = {"speed": "speed", "tiled": "tiled", "mutants": "mutants"}

COMMANDS = {"build": cmd_build, "check": cmd_check, "execute": cmd_execute, "refs": cmd_refs, "all": cmd_all, "colab": cmd_colab,
            "html": cmd_html, "bench": cmd_bench, "mutants": mutants.command}
