"""python -m tools COMMAND: the course's development tools (benchmarks and mutation testing), not shipped.

The instructor's command line is ``python -m builder``; these commands measure the course and its checks for
contributors and CI. They share the builder's parsing, exit codes and error reporting (``builder.cli``).
"""

import json
import sys

from builder import cli, exits


def bench_options(p):
    from .bench import BENCHES

    p.add_argument("what", choices=sorted(BENCHES), help="check: the check command against importing nbformat and jupytext; speed: each notebook against the floor of a kernel start and its imports; "
                   "tiled: the course's tiled attention against dense, time and memory; grade: time per submission of a batch of 20; mutants: the mutation score of 60 sampled mutants per notebook")
    cli._names(p, "notebook names or reference keys (speed only; default: all)")
    p.add_argument("--repeats", type=int, help="runs of each measurement (default: check 5, speed 3, tiled 7, grade 3; mutants takes none)")
    p.add_argument("--against", metavar="REV", help="speed only: also time each notebook as committed at this git revision, "
                   "in interleaved rounds, and report now / then per round")
    p.add_argument("--colab", action="store_true", help="speed only: time the floor and the notebooks on the Colab-pinned kernel "
                   "of .colab-venv (Colab's IPython, ipykernel, numpy and matplotlib), which `python -m builder colab` builds")



def bench(course, args) -> int:
    """Benchmarks reported as ratios within one run; fail when a result misses its target."""
    from . import bench as benchmarks

    try:
        if args.against is not None and args.what != "speed":
            raise ValueError(f"--against compares notebook times and applies to `bench speed` only, not `bench {args.what}`")
        if args.repeats is not None and args.what == "mutants":
            raise ValueError("bench mutants runs each mutant once; --repeats does not apply to it")
        extra = {"against": args.against} if args.against is not None else {}
        extra |= {"repeats": args.repeats} if args.repeats is not None else {}
        if args.colab:
            extra["kernel_name"] = _colab_kernel(course, args.what)
        results = benchmarks.BENCHES[args.what](course, args.names, **extra)
    except benchmarks.NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exits.FAILED
    except ValueError as exc:  # bad names or repeats: say what is allowed
        print(f"error: {exc}", file=sys.stderr)
        return exits.USAGE
    return exits.OK if all(benchmarks.within_budget(r) for r in results) else exits.FAILED


def _colab_kernel(course, what: str) -> str:
    """The Colab-pinned kernel of the checkout's .colab-venv, made visible; ValueError when ``what`` is not speed or it is missing."""
    from builder import colab as pinned

    if what != "speed":
        raise ValueError(f"--colab times notebooks on the Colab-pinned kernel and applies to `bench speed` only, not `bench {what}`")
    venv = course.root / pinned.DEFAULT_VENV
    if not pinned.pins_file(venv).exists():
        raise ValueError(f"--colab needs the Colab-pinned environment: run `python -m builder colab` once, which builds {pinned.DEFAULT_VENV}")
    print(pinned.versions_line(json.loads(pinned.pins_file(venv).read_text(encoding="utf-8"))["versions"]), flush=True)
    return pinned.use_kernel(venv)


# name: (parser function, command body), as in builder.cli.COMMANDS.
COMMANDS = {
    "bench": (bench_options, bench),
    "mutants": "tools.mutants",
}


def main(argv: list[str] | None = None) -> int:
    """Run one development command and return its exit code; no traceback escapes."""
    return cli.main(argv, commands=COMMANDS, prog="python -m tools", summary=__doc__)


def parse_args(argv: list[str] | None) -> object:
    """Parsed arguments of one development command, as ``builder.cli.parse_args``."""
    return cli.parse_args(argv, COMMANDS, prog="python -m tools", summary=__doc__)
