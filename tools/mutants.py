"""``python -m tools mutants [NAMES]``: how many one-token bugs the notebooks' own checks catch.

Each mutant changes one token of a function that a notebook defines outside its inlined
regions (``# builder:begin`` ... ``# builder:end``): a comparison, an arithmetic operator, a
constant, an axis, ``keepdims``, a swapped call (``max``/``min``, ``tril``/``triu``, ...) or a
dropped square root. The mutated source runs as a script (``python <name>.py`` in an empty
folder, ``MPLBACKEND=Agg``); a non-zero exit kills the mutant, and so does a timeout (counted
apart). Survivors are bugs the notebook would bless with PASS.

Mutants that compute the same thing as the original are listed, each with a reason, in
``equivalent_mutants.toml`` (at the repository root: course data, not the tests'); they are keyed by notebook, function and mutation, never by
line number, and the score is printed with and without them.
"""

import argparse
import ast
import concurrent.futures
import fnmatch
import os
import random
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from builder import exits, regions
from builder.diagnostics import BuilderError
from builder.grade.runner import THREAD_VARIABLES
from builder.progress import Progress, duration

EQUIVALENTS = Path("equivalent_mutants.toml")
TARGET = 0.97  # issue 12: the checks catch at least 97% of the non-equivalent mutants

COMPARE_SWAPS = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In,
}
BINOP_SWAPS = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.MatMult: ast.Mult,
}
CALL_SWAPS = {
    "max": "min", "min": "max", "amax": "amin", "amin": "amax", "argmax": "argmin", "argmin": "argmax",
    "maximum": "minimum", "minimum": "maximum", "tril": "triu", "triu": "tril", "sum": "mean", "mean": "sum",
    "ones": "zeros", "zeros": "ones", "ones_like": "zeros_like", "zeros_like": "ones_like", "floor": "ceil",
    "ceil": "floor", "any": "all", "all": "any", "sin": "cos", "cos": "sin", "exp": "expm1", "log": "log1p",
    "log1p": "log", "expm1": "exp", "cumsum": "cumprod", "cumprod": "cumsum", "isinf": "isnan", "isnan": "isinf",
    "logical_and": "logical_or", "logical_or": "logical_and", "float32": "float16", "float64": "float32",
}
ROOTS = {"sqrt", "rsqrt"}
AXIS_WORDS = {"axis", "axes", "dim", "dims"}
KEEPDIMS_WORDS = {"keepdims", "keepdim"}
# Calls whose positional integer arguments are axes.
AXIS_CALLS = {"sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "std", "var", "cumsum", "cumprod",
              "softmax", "log_softmax", "swapaxes", "transpose", "moveaxis", "expand_dims", "squeeze", "unsqueeze",
              "concatenate", "stack", "flip", "norm", "size", "logsumexp", "split", "chunk", "repeat_interleave"}


@dataclass(frozen=True)
class Mutant:
    """One mutation: where it is, what it does, and the full mutated source."""

    notebook: str
    function: str
    line: int
    category: str
    original: str
    mutated: str
    occurrence: int = 1

    @property
    def description(self) -> str:
        """What changed, as the survivors list prints it."""
        return f"`{self.original}` -> `{self.mutated}`"

    @property
    def key(self) -> str:
        """Stable identity (no line number): function, mutation, and which occurrence of the same text."""
        nth = f" #{self.occurrence}" if self.occurrence > 1 else ""
        return f"{self.function}: {self.description}{nth}"


@dataclass(frozen=True)
class Site:
    """A node to replace: its source span and the replacement text."""

    node: ast.AST
    category: str
    replacement: str


# ---- finding the target functions ---------------------------------------------------------------


def target_functions(tree: ast.Module, text: str, path: str, skip: list[str]) -> list[tuple[str, ast.AST]]:
    """(qualified name, def node) for every function outside the inlined regions, minus skipped names."""
    spans = [(r.begin_line, r.end_line) for r in regions.parse(text, path)]
    found: list[tuple[str, ast.AST]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                inside = any(a <= child.lineno <= b for a, b in spans)
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{name}.")
                elif not inside and not any(fnmatch.fnmatchcase(name, p) for p in skip):
                    found.append((name, child))
            elif isinstance(child, (ast.If, ast.Try, ast.With)):
                visit(child, prefix)

    visit(tree, "")
    return found


def _docstring_nodes(func: ast.AST) -> set[int]:
    """ids of docstring constants in ``func`` and its nested defs: text, not code."""
    ids = set()
    for node in ast.walk(func):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


# ---- mutation operators -------------------------------------------------------------------------


def _unparse_with(node: ast.AST, edit) -> str:
    """Source of a copy of ``node`` after ``edit(copy)``, parenthesised when it is an expression."""
    import copy

    clone = copy.deepcopy(node)
    edit(clone)
    text = ast.unparse(clone)
    return f"({text})" if isinstance(node, ast.expr) else text


def _set_attr(attr: str, value):
    """An edit that sets one attribute of the cloned node."""
    def edit(clone):
        setattr(clone, attr, value)
    return edit


def compare_sites(node: ast.Compare) -> list[Site]:
    """Each comparison operator flipped to its neighbour (``<`` to ``<=``, ``==`` to ``!=``, ``is`` to ``is not``)."""
    sites = []
    for i, op in enumerate(node.ops):
        swap = COMPARE_SWAPS.get(type(op))
        if swap:
            ops = list(node.ops)
            ops[i] = swap()
            sites.append(Site(node, "comparison", _unparse_with(node, _set_attr("ops", ops))))
    return sites


def binop_sites(node: ast.AST) -> list[Site]:
    """The arithmetic operator swapped (``+``/``-``, ``*``/``/``, ``**`` to ``*``, ``@`` to ``*``)."""
    swap = BINOP_SWAPS.get(type(node.op))
    return [Site(node, "arithmetic", _unparse_with(node, _set_attr("op", swap())))] if swap else []


def unary_sites(node: ast.UnaryOp) -> list[Site]:
    """A dropped minus sign or ``not``."""
    if isinstance(node.op, (ast.USub, ast.Not)):
        return [Site(node, "arithmetic" if isinstance(node.op, ast.USub) else "logic", f"({ast.unparse(node.operand)})")]
    return []


def boolop_sites(node: ast.BoolOp) -> list[Site]:
    """``and`` and ``or`` swapped."""
    other = ast.Or if isinstance(node.op, ast.And) else ast.And
    return [Site(node, "logic", _unparse_with(node, _set_attr("op", other())))]


def _constant_values(value) -> list:
    """The replacements of a numeric constant: a flipped bool, an int one up and one down, a float doubled and halved."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1]
    if isinstance(value, float):
        return [1.0] if value == 0 else [value * 2, value / 2]
    return []


def constant_sites(node: ast.Constant, category: str) -> list[Site]:
    """One site per replacement of a numeric constant."""
    return [Site(node, category, repr(v) if v >= 0 or isinstance(v, bool) else f"({v!r})") for v in _constant_values(node.value)]


def call_sites(node: ast.Call) -> list[Site]:
    """Swapped calls, dropped square roots, and dropped axis/keepdims keywords."""
    sites = []
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name in CALL_SWAPS:
        attr = "attr" if isinstance(func, ast.Attribute) else "id"
        sites.append(Site(node, "swapped call", _unparse_with(node, lambda c: setattr(c.func, attr, CALL_SWAPS[name]))))
    if name in ROOTS:
        kept = node.args[0] if node.args else func.value if isinstance(func, ast.Attribute) else None
        if kept is not None:
            sites.append(Site(node, "dropped root", f"({ast.unparse(kept)})"))
    for i, kw in enumerate(node.keywords):
        if kw.arg in AXIS_WORDS | KEEPDIMS_WORDS:
            category = "axis" if kw.arg in AXIS_WORDS else "keepdims"
            sites.append(Site(node, category, _unparse_with(node, lambda c, i=i: c.keywords.pop(i))))
    return sites


def _constant_category(parents: dict[int, ast.AST], node: ast.Constant) -> str:
    """``axis`` or ``keepdims`` when the constant is one, else ``constant``."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.UnaryOp):
        parent = parents.get(id(parent))
    if isinstance(parent, ast.keyword) and parent.arg in AXIS_WORDS:
        return "axis"
    if isinstance(parent, ast.keyword) and parent.arg in KEEPDIMS_WORDS:
        return "keepdims"
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr in AXIS_CALLS:
        return "axis"
    if isinstance(parent, ast.Subscript) and isinstance(parent.value, ast.Attribute) and parent.value.attr == "shape":
        return "axis"
    return "constant"


def sites_in(func: ast.AST) -> list[Site]:
    """Every mutation site inside one function (nested defs included), in source order."""
    skip = _docstring_nodes(func)
    parents = {id(child): node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}
    inside_fstring = {id(n) for node in ast.walk(func) if isinstance(node, ast.JoinedStr) for n in ast.walk(node)}
    sites: list[Site] = []
    for node in ast.walk(func):
        if id(node) in skip or id(node) in inside_fstring:
            continue
        if isinstance(node, ast.Compare):
            sites += compare_sites(node)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            sites += binop_sites(node)
        elif isinstance(node, ast.UnaryOp):
            if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
                sites += [Site(node, _constant_category(parents, node.operand), repr(v) if v >= 0 else f"({v!r})")
                          for v in _constant_values(-node.operand.value)]
                skip.add(id(node.operand))
            else:
                sites += unary_sites(node)
        elif isinstance(node, ast.BoolOp):
            sites += boolop_sites(node)
        elif isinstance(node, ast.Constant) and id(node) not in skip:
            if isinstance(node.value, (int, float)):
                sites += constant_sites(node, _constant_category(parents, node))
        elif isinstance(node, ast.Call):
            sites += call_sites(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 0.5:
            sites.append(Site(node, "dropped root", f"({ast.unparse(node.left)})"))
    return sorted(sites, key=lambda s: (s.node.lineno, s.node.col_offset, s.category, s.replacement))


# ---- building mutated sources -------------------------------------------------------------------


def replace_span(lines: list[bytes], node: ast.AST, text: str) -> str:
    """The source with ``node``'s span (UTF-8 byte offsets, as ast gives them) replaced by ``text``."""
    start, end = node.lineno - 1, node.end_lineno - 1
    head = lines[start][: node.col_offset]
    tail = lines[end][node.end_col_offset:]
    return b"".join(lines[:start] + [head + text.encode() + tail] + lines[end + 1:]).decode()


def segment(lines: list[bytes], node: ast.AST) -> str:
    """The original source text of ``node``, on one line."""
    if node.lineno == node.end_lineno:
        return lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode()
    return ast.unparse(node)


def _short(text: str, limit: int = 90) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def context_of(node: ast.AST, parents: dict[int, ast.AST], lines: list[bytes]) -> ast.AST:
    """The smallest enclosing one-line expression that makes a short node (``1``, ``-1``) recognisable."""
    context = node
    while len(segment(lines, context)) < 16:
        parent = parents.get(id(context))
        if not isinstance(parent, (ast.expr, ast.keyword)) or parent.lineno != parent.end_lineno:
            break
        context = parent
    return context


def _parameter_with_default(node: ast.AST, parents: dict[int, ast.AST]) -> str | None:
    """The parameter name when ``node`` is a default value in a signature (``n_heads=4``), else None."""
    arguments = parents.get(id(node))
    if not isinstance(arguments, ast.arguments):
        return None
    positional = arguments.posonlyargs + arguments.args
    for arg, default in zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults):
        if default is node:
            return arg.arg
    for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if default is node:
            return arg.arg
    return None


def describe(lines: list[bytes], site: Site, parents: dict[int, ast.AST]) -> tuple[str, str]:
    """(original, mutated) text of a site, in its recognisable one-line context."""
    node = site.node
    replacement = site.replacement
    if isinstance(node, ast.expr) and replacement.startswith("(") and replacement.endswith(")"):
        replacement = replacement[1:-1]
    default_of = _parameter_with_default(node, parents)
    if default_of:
        return _short(f"{default_of}={segment(lines, node)}"), _short(f"{default_of}={replacement}")
    context = context_of(node, parents, lines)
    if context is node or node.lineno != node.end_lineno:
        return _short(segment(lines, node)), _short(replacement)
    line = lines[node.lineno - 1]
    mutated = line[context.col_offset:node.col_offset].decode() + replacement + line[node.end_col_offset:context.end_col_offset].decode()
    return _short(segment(lines, context)), _short(mutated)


def generate(nb_name: str, text: str, path: str, skip: list[str], *, sources: bool = True) -> list[tuple[Mutant, str]]:
    """Every mutant of one notebook source, with its mutated source ("" when ``sources`` is false), in a stable order.

    Building each mutated source is most of the time; listing mutants or matching their keys needs none.
    """
    tree = ast.parse(text, filename=path)
    lines = text.encode().splitlines(keepends=True)
    seen: Counter = Counter()
    out = []
    for name, func in target_functions(tree, text, path, skip):
        parents = {id(child): node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}
        for site in sites_in(func):
            original, mutated = describe(lines, site, parents)
            if original == mutated:
                continue
            seen[(name, original, mutated)] += 1
            mutant = Mutant(nb_name, name, site.node.lineno, site.category, original, mutated, seen[(name, original, mutated)])
            out.append((mutant, replace_span(lines, site.node, site.replacement) if sources else ""))
    return out


# ---- the checked-in lists -----------------------------------------------------------------------


@dataclass
class Lists:
    """The equivalent mutants (key -> reason) and the skipped function patterns of one notebook."""

    equivalent: dict[str, str]
    skip: list[str]


def load_lists(root: Path, nb_name: str) -> Lists:
    """Read ``equivalent_mutants.toml`` for one notebook; every entry must carry a reason."""
    path = root / EQUIVALENTS
    table = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    equivalent, skip = {}, []
    for entry in table.get("equivalent", []):
        if entry.get("notebook") == nb_name:
            if not str(entry.get("reason", "")).strip():
                raise ValueError(f"{path}: equivalent mutant {entry.get('mutant')!r} has no reason")
            equivalent[entry["mutant"]] = entry["reason"]
    for entry in table.get("skip", []):
        if entry.get("notebook", nb_name) == nb_name:
            if not str(entry.get("reason", "")).strip():
                raise ValueError(f"{path}: skipped function pattern {entry.get('functions')!r} has no reason")
            skip.append(entry["functions"])
    return Lists(equivalent, skip)


# ---- running ------------------------------------------------------------------------------------


class BaselineFailed(BuilderError, RuntimeError):
    """The unmutated notebook does not pass as a script, so no mutant can be scored (a failed check: exit 1)."""

    exit_code = exits.FAILED


@dataclass(frozen=True)
class Outcome:
    """What running one mutant did."""

    mutant: Mutant
    verdict: str  # "killed", "timeout", "survived"
    seconds: float


def run_script(source: str, filename: str, timeout: float) -> tuple[str, float]:
    """Run ``source`` as ``python <filename>`` in an empty folder; verdict and seconds."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", **dict.fromkeys(THREAD_VARIABLES, "1"))
    with tempfile.TemporaryDirectory(prefix="course-mutant-") as tmp:
        (Path(tmp) / filename).write_text(source, encoding="utf-8")
        start = time.perf_counter()
        try:
            code = subprocess.run([sys.executable, filename], cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - start
        return ("killed" if code else "survived"), time.perf_counter() - start


def run_mutants(pairs: list[tuple[Mutant, str]], filename: str, timeout: float, jobs: int, progress=None) -> list[Outcome]:
    """Run every mutant (``jobs`` at a time); outcomes in the order of ``pairs``."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")

    def one(pair):
        verdict, seconds = run_script(pair[1], filename, timeout)
        outcome = Outcome(pair[0], verdict, seconds)
        if progress:
            progress(outcome)
        return outcome

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, pairs))


def sample(pairs: list, size: int | None, seed: int) -> list:
    """A seeded sample of ``size`` mutants (all of them when ``size`` is None or too large), in source order."""
    if size is None or size >= len(pairs):
        return list(pairs)
    chosen = sorted(random.Random(seed).sample(range(len(pairs)), size))
    return [pairs[i] for i in chosen]


@dataclass
class Score:
    """The result for one notebook."""

    notebook: str
    outcomes: list[Outcome]
    equivalent: dict[str, str]
    total_mutants: int
    baseline_seconds: float
    seconds: float

    def counts(self) -> dict[str, int]:
        """Mutants run, killed, timed out, survived, and how many are listed as equivalent."""
        c = Counter(o.verdict for o in self.outcomes)
        equiv = [o for o in self.outcomes if o.mutant.key in self.equivalent]
        return {"run": len(self.outcomes), "killed": c["killed"], "timeout": c["timeout"], "survived": c["survived"],
                "equivalent": len(equiv), "equivalent_survived": sum(o.verdict == "survived" for o in equiv)}

    @property
    def survivors(self) -> list[Outcome]:
        """Survivors that are not listed as equivalent: the bugs the checks miss."""
        return [o for o in self.outcomes if o.verdict == "survived" and o.mutant.key not in self.equivalent]

    @property
    def ratio(self) -> float:
        """Killed share of the non-equivalent mutants (timeouts count as kills)."""
        c = self.counts()
        relevant = c["run"] - c["equivalent_survived"]
        return (c["killed"] + c["timeout"]) / relevant if relevant else 1.0

    @property
    def raw_ratio(self) -> float:
        """Killed share of every mutant run, the equivalent ones included."""
        c = self.counts()
        return (c["killed"] + c["timeout"]) / c["run"] if c["run"] else 1.0


def score_notebook(course, nb, *, size: int | None, seed: int = 0, jobs: int = 1, timeout: float | None = None,
                   patterns: tuple[str, ...] = (), progress=None, announce=None) -> Score:
    """Generate, sample and run the mutants of one notebook (functions matching ``patterns``); the baseline must pass first.

    ``announce(count, baseline_seconds)`` is called once the unmutated run is timed, before any mutant runs.
    """
    text = nb.source.read_text(encoding="utf-8")
    lists = load_lists(course.root, nb.name)
    pairs = select(generate(nb.name, text, str(nb.source), lists.skip), patterns)
    verdict, baseline = run_script(text, nb.source.name, timeout or 600)
    if verdict != "survived":
        raise BaselineFailed(f"{nb.name}: the unmutated notebook does not pass as a script ({verdict}); "
                             f"run `python {nb.source.relative_to(course.root).as_posix()}` to see which check fails, and fix it first")
    limit = timeout or max(60.0, 4 * baseline)
    chosen = sample(pairs, size, seed)
    if announce:
        announce(len(chosen), baseline)
    start = time.perf_counter()
    outcomes = run_mutants(chosen, nb.source.name, limit, jobs, progress)
    return Score(nb.name, outcomes, lists.equivalent, len(pairs), baseline, time.perf_counter() - start)


def report(score: Score, source_path: str) -> str:
    """The score with and without the equivalent mutants, the survivors, and the time."""
    c = score.counts()
    per = score.seconds / c["run"] if c["run"] else 0.0
    lines = [
        f"{score.notebook}: {c['run']} of {score.total_mutants} mutants run; killed {c['killed']}, timed out {c['timeout']}, "
        f"survived {c['survived']} ({c['equivalent_survived']} of them listed as equivalent)",
        f"  score {100 * score.ratio:.1f}% of the non-equivalent mutants ({100 * score.raw_ratio:.1f}% counting the equivalent ones)",
        f"  time {score.seconds:.0f} s, {per:.1f} s per mutant (the unmutated script: {score.baseline_seconds:.1f} s)",
    ]
    killed_equivalent = [o for o in score.outcomes if o.mutant.key in score.equivalent and o.verdict != "survived"]
    for o in killed_equivalent:
        lines.append(f"  listed as equivalent but {o.verdict}: {o.mutant.key} (remove it from {EQUIVALENTS})")
    if score.survivors:
        by_category = Counter(o.mutant.category for o in score.survivors)
        lines.append("  survivors by category: " + ", ".join(f"{k} {v}" for k, v in by_category.most_common()))
        lines.append("  survivors:")
        lines += [f"    {source_path}({o.mutant.line}): {o.mutant.key}  [{o.mutant.category}]" for o in score.survivors]
    return "\n".join(lines)


def stale_equivalents(course, nb) -> list[str]:
    """Equivalent entries that no longer match any mutant of the notebook (the code moved on)."""
    lists = load_lists(course.root, nb.name)
    keys = {m.key for m, _ in generate(nb.name, nb.source.read_text(encoding="utf-8"), str(nb.source), lists.skip, sources=False)}
    return [k for k in lists.equivalent if k not in keys]


# ---- command line -------------------------------------------------------------------------------


def options(p) -> None:
    """The flags of ``mutants``."""
    p.add_argument("names", nargs="*", help="notebook names or reference keys (default: all)")
    p.add_argument("--sample", type=_at_least_one, help="run a seeded random sample of this many mutants per notebook (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    p.add_argument("--jobs", type=_at_least_one, default=1, help="mutants run at the same time (default 1)")
    p.add_argument("--timeout", type=float, help="seconds per mutant before it counts as killed by timeout (default: 4x the unmutated run, at least 60)")
    p.add_argument("--function", action="append", default=[], help="only mutants of functions matching this pattern (repeatable)")
    p.add_argument("--list", action="store_true", help="print the mutants that would run, run none")
    p.add_argument("--min-score", type=float, help="fail when a notebook's score without equivalents is below this percentage")


def _at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def select(pairs: list, patterns: list[str]) -> list:
    """Mutants of functions matching any pattern (all when there are none)."""
    if not patterns:
        return pairs
    return [p for p in pairs if any(fnmatch.fnmatchcase(p[0].function, pat) for pat in patterns)]


def command(course, args) -> int:
    """Mutation score of the notebooks' own checks: one-token bugs outside the inlined regions, each run as a script.

    Prints each notebook's score, with and without the listed equivalent mutants, and every survivor as file(line);
    exit 1 when a score is under --min-score.
    """
    status = 0
    for nb in course.select(args.names):
        rel = nb.source.relative_to(course.root).as_posix()
        if args.list:
            lists = load_lists(course.root, nb.name)
            pairs = select(generate(nb.name, nb.source.read_text(encoding="utf-8"), str(nb.source), lists.skip, sources=False), args.function)
            for m, _ in sample(pairs, args.sample, args.seed):
                print(f"{rel}({m.line}): {m.key}  [{m.category}]{'  (equivalent)' if m.key in lists.equivalent else ''}")
            print(f"{nb.name}: {len(pairs)} mutants")
            continue
        score = run_selected(course, nb, args)
        print(report(score, rel), flush=True)
        for key in stale_equivalents(course, nb):
            print(f"  stale entry in {EQUIVALENTS} (matches no mutant): {key}")
        if args.min_score is not None and 100 * score.ratio < args.min_score:
            status = 1
    return status


def run_selected(course, nb, args) -> Score:
    """``score_notebook`` with the command's options; on stderr, the expected duration first, then progress with an estimate."""
    print(f"mutants: {nb.name}: timing the unmutated notebook first", file=sys.stderr, flush=True)
    bar = []

    def announce(count: int, baseline: float) -> None:
        print(f"mutants: {nb.name}: {count} mutants, each a run of up to about {baseline:.1f} s (the unmutated run), "
              f"{args.jobs} at a time: expect up to about {duration(count * baseline / args.jobs)}"
              + ("" if args.sample else "; --sample N runs a seeded sample"), file=sys.stderr, flush=True)
        bar.append(Progress(f"mutants {nb.name}", count, unit="mutant", seconds_each=baseline / args.jobs, every=10))

    def progress(outcome: Outcome) -> None:
        bar[0].finished(f"{outcome.verdict} {outcome.mutant.function}")

    score = score_notebook(course, nb, size=args.sample, seed=args.seed, jobs=args.jobs, timeout=args.timeout,
                           patterns=tuple(args.function), progress=progress, announce=announce)
    if bar:
        bar[0].close()
    return score
