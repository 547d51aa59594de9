"""The ``grade`` subcommand: its options and what it runs."""

import argparse
import io
import math
import os
import sys
from pathlib import Path

from . import batch, gradescope, report, selftest

DEFAULT_TIMEOUT = 60  # seconds per exercise check


def options(grade) -> None:
    """The flags of ``grade``."""
    grade.add_argument("submissions", nargs="*", type=Path, help="submitted notebooks (.ipynb), or folders: every .ipynb under them")
    grade.add_argument("--id", choices=batch.IDS, dest="id_mode",
                       help="what names each submission in grades.csv: its path as given, its parent folder or its file stem "
                            "(default: its path relative to the folder given, or its file name)")
    grade.add_argument("--feedback", type=Path, metavar="DIR", help="also write one self-contained HTML page per student into DIR")
    grade.add_argument("--out", type=Path, help="folder for <submission>/results.json, grades.csv, summary.csv and summary.html")
    grade.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help=f"time limit of each exercise's check, in seconds (default {DEFAULT_TIMEOUT})")
    grade.add_argument("--module", help="grade every submission as this notebook (name or reference key); others are refused")
    grade.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="judge processes in parallel (default: the number of cores)")
    grade.add_argument("--visibility", choices=report.VISIBILITIES, default=report.VISIBILITY, help="Gradescope visibility of the results (default visible)")
    grade.add_argument("--gradescope-bundle", type=Path, metavar="BUNDLE.zip", help="write Gradescope's autograder zip for the current course instead")
    grade.add_argument("--budget", type=float, default=gradescope.BUDGET, help=f"Gradescope: total seconds for one submission, written into run_autograder (default {gradescope.BUDGET:g}, under Gradescope's 10 minutes)")
    grade.add_argument("--gradescope-selftest", type=Path, metavar="BUNDLE.zip", help="unpack a bundle into a temporary root and grade the solution and stub editions with it")
    grade.add_argument("--gradescope-root", type=Path, help=argparse.SUPPRESS)  # run_autograder: grade ROOT/submission


def problem(args) -> str | None:
    """What is wrong with the options, before anything is graded; None when they are fine."""
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        return f"--timeout must be a finite positive number of seconds, got {args.timeout:g}"
    if args.jobs < 1:
        return f"--jobs must be at least 1, got {args.jobs}"
    if not math.isfinite(args.budget) or args.budget <= 0:
        return f"--budget must be a finite positive number of seconds, got {args.budget:g}"
    for flag, folder in (("--out", args.out), ("--feedback", args.feedback)):
        if folder is not None and folder.exists() and not folder.is_dir():
            return f"{flag} {folder} is a file; give a folder"
    return None


def command(course, args) -> int:
    """Score submitted notebooks with the course's contract checks (results.json, grades.csv), or write a Gradescope autograder.

    Exit 1 when a submission could not be graded (the others are graded all the same), 2 on bad usage.
    """
    # A file name or message no locale can show is escaped, not fatal (a stream put in the console's place may not
    # reconfigure: it is left as it is).
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    module = course.select([args.module])[0].name if args.module else None
    wrong = problem(args)
    if wrong:
        return _usage(wrong)
    if args.gradescope_bundle:
        if args.submissions or args.out:
            return _usage("--gradescope-bundle takes no submissions and no --out")
        print(f"wrote {gradescope.bundle(course, args.gradescope_bundle, module, timeout=args.timeout, budget=args.budget, visibility=args.visibility)}")
        return 0
    if args.gradescope_selftest:
        return gradescope.selftest(course, args.gradescope_selftest)
    if args.gradescope_root:
        result = gradescope.run_in_container(course, args.gradescope_root, timeout=args.timeout, module=module,
                                             budget=args.budget, visibility=args.visibility)
        print(result["output"])
        return 0  # Gradescope reads the verdict from results.json, whatever the exit code
    if not args.submissions or not args.out:
        return _usage("give submitted notebooks and --out DIR (or --gradescope-bundle BUNDLE.zip)")
    collected = batch.collect(args.submissions, args.id_mode)
    if not collected.paths:
        return _usage(f"no .ipynb notebook in {', '.join(map(str, args.submissions))}")
    try:
        rows = batch.grade(course, collected.paths, timeout=args.timeout, module=module, jobs=args.jobs, visibility=args.visibility,
                           ids=collected.ids)
    except selftest.EnvironmentProblem as stopped:
        print(f"grade: nothing graded, nothing written: {stopped}", file=sys.stderr)
        return 1
    batch.write(rows, args.out, collected.skipped, args.feedback)
    for row in rows:
        print(batch.summary(row))
    pages = f", and {len(rows)} feedback pages in {args.feedback}" if args.feedback else ""
    print(f"grade: wrote {len(rows)} results.json, {args.out / 'grades.csv'}, summary.csv and summary.html{pages}")
    return 1 if collected.skipped or any(report.status(row.result) != "graded" for row in rows) else 0


def _usage(message: str) -> int:
    """Report a usage error and return its exit code."""
    print(f"error: {message}", file=sys.stderr)
    return 2
