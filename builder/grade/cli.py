"""The ``grade`` subcommand: its options and what it runs."""

import argparse
import sys
from pathlib import Path

from . import batch, gradescope

DEFAULT_TIMEOUT = 60  # seconds per exercise check


def options(grade) -> None:
    """The flags of ``grade``."""
    grade.add_argument("submissions", nargs="*", type=Path, help="submitted notebooks (.ipynb)")
    grade.add_argument("--out", type=Path, help="folder for <submission>/results.json and grades.csv")
    grade.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help=f"time limit of each exercise's check, in seconds (default {DEFAULT_TIMEOUT})")
    grade.add_argument("--module", help="grade every submission as this notebook (name or reference key); others are refused")
    grade.add_argument("--gradescope-bundle", type=Path, metavar="BUNDLE.zip", help="write Gradescope's autograder zip for the current course instead")
    grade.add_argument("--gradescope-root", type=Path, help=argparse.SUPPRESS)  # run_autograder: grade ROOT/submission


def command(course, args) -> int:
    """Score submitted notebooks with the course's contract checks (results.json, grades.csv), or write a Gradescope autograder.

    Exit 1 when a submission could not be graded (the others are graded all the same), 2 on bad usage.
    """
    module = course.select([args.module])[0].name if args.module else None
    if args.timeout <= 0:
        return _usage(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    if args.gradescope_bundle:
        if args.submissions or args.out:
            return _usage("--gradescope-bundle takes no submissions and no --out")
        print(f"wrote {gradescope.bundle(course, args.gradescope_bundle, module)}")
        return 0
    if args.gradescope_root:
        result = gradescope.run_in_container(course, args.gradescope_root, timeout=args.timeout, module=module)
        print(result["output"])
        return 0  # Gradescope reads the verdict from results.json, whatever the exit code
    if not args.submissions or not args.out:
        return _usage("give submitted notebooks and --out DIR (or --gradescope-bundle BUNDLE.zip)")
    rows = batch.grade(course, args.submissions, timeout=args.timeout, module=module)
    batch.write(rows, args.out)
    for row in rows:
        print(batch.summary(row))
    print(f"grade: wrote {len(rows)} results.json and {args.out / 'grades.csv'}")
    return 1 if any(not row.result["tests"] for row in rows) else 0


def _usage(message: str) -> int:
    """Report a usage error and return its exit code."""
    print(f"error: {message}", file=sys.stderr)
    return 2
