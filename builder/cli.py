"""``python -m builder <command>``: build, check, execute and export the course notebooks."""

import argparse
import sys
from pathlib import Path

from . import __version__, execute, notebooks, refs, regions
from .config import ROOT, ConfigError, load_course
from .inline import InlineError

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
    everything = sub.add_parser("all", help="build, check and execute")
    _execution_options(everything)
    bench = sub.add_parser("bench", help="benchmarks; `bench speed` times notebooks against the kernel-and-imports floor")
    bench.add_argument("what", choices=sorted(BENCHES), help="which benchmark to run")
    bench.add_argument("names", nargs="*", help="notebook names or reference keys (default: all)")
    bench.add_argument("--repeats", type=int, default=1, help="runs of each measurement; medians are reported")
    return parser.parse_args(argv)


def _execution_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by the commands that execute notebooks."""
    parser.add_argument("names", nargs="*", help="notebook names or reference keys (default: all)")
    parser.add_argument("--budget", type=float, help="fail when a notebook takes longer than this many seconds")
    parser.add_argument("--timeout", type=int, default=600, help="per-cell timeout in seconds")
    parser.add_argument("--out", type=Path, help="folder for executed copies (default: dist/executed)")


def main(argv: list[str] | None = None) -> int:
    """Run one builder command and return its exit code."""
    args = parse_args(argv)
    try:
        course = load_course(args.root)
        return COMMANDS[args.command](course, args)
    except (regions.RegionError, InlineError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MALFORMED
    except notebooks.HandEditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_HAND_EDIT


def cmd_build(course, args) -> int:
    """Rewrite every region and paired notebook that is out of date."""
    for nb in course.notebooks:
        for path in notebooks.build_one(course, nb, nb.source, nb.ipynb, force=getattr(args, "force", False)):
            print(f"wrote {notebooks.relative(course, path)}")
    print("build: up to date")
    return EXIT_OK


def cmd_check(course, args) -> int:
    """Report every drift without writing anything."""
    findings: list[object] = []
    for nb in course.notebooks:
        findings += notebooks.source_findings(course, nb, nb.source)
        findings += notebooks.pair_findings(course, nb.source, nb.ipynb)
    findings += reference_problems(course)
    for finding in findings:
        print(finding)
        if getattr(finding, "diff", ""):
            print(finding.diff)
    if findings:
        print(f"check: {len(findings)} problem(s); `python -m builder build` fixes stale regions and pairs", file=sys.stderr)
        return EXIT_FAILED
    print(f"check: {len(course.notebooks)} notebooks, their regions, pairs and references are in sync")
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


def cmd_execute(course, args) -> int:
    """Execute the chosen notebooks and report their times."""
    out = args.out or course.root / "dist" / "executed"
    status = EXIT_OK
    for nb in course.select(args.names):
        result = execute.run(nb.ipynb, out, timeout=args.timeout)
        print(execute.report(result, args.budget), flush=True)
        over = args.budget is not None and result.seconds > args.budget
        if result.error or over:
            status = EXIT_FAILED
    return status


def cmd_all(course, args) -> int:
    """The main job: build, check, then execute."""
    for step in (cmd_build, cmd_check, cmd_execute):
        code = step(course, args)
        if code != EXIT_OK:
            return code
    return EXIT_OK


def cmd_bench(course, args) -> int:
    """Run one benchmark from builder/bench.py; fail when a result is over its budget."""
    from . import bench

    results = getattr(bench, BENCHES[args.what])(course, args.names, repeats=args.repeats)
    return EXIT_OK if all(bench.within_budget(r) for r in results) else EXIT_FAILED


# `bench WHAT` runs builder.bench.<function>(course, names, repeats=...); add a benchmark with one line here.
BENCHES = {"speed": "speed"}

COMMANDS = {"build": cmd_build, "check": cmd_check, "execute": cmd_execute, "refs": cmd_refs, "all": cmd_all, "bench": cmd_bench}
