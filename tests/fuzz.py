"""A property-based fuzz of every public function a notebook defines, found by introspection.

1. The notebook's source runs once, in-process, as a script (Agg backend, an empty folder). While
   it runs, a profile hook records the arguments of the first few calls to every function and
   method the source defines: the notebook's own calls are the baseline calls, so a new function
   is covered without being listed. ``BASELINES`` adds calls for functions the notebook never calls.
2. Each public function (not starting with ``_``; methods of public classes included) is replayed
   with its smallest baseline call that succeeds, then with one argument changed at a time: dtype,
   rank, empty dims, NaN/inf, negative, zero, huge, mismatched shape, ``requires_grad``, another
   device, wrong types; hypothesis (derandomized) adds drawn integers and floats.
3. Every call must raise only TypeError, ValueError or FloatingPointError, return no NaN from
   NaN-free input, finish within ``CALL_SECONDS``, and allocate within ``BUDGET_BYTES`` (an address
   space limit around each call turns a bigger allocation into a finding instead of a dead machine).

``python -m tests.fuzz [module3|module5_1|...]`` prints the findings report; ``pytest -m fuzz`` asserts it.
"""

import contextlib
import copy
import functools
import inspect
import io
import math
import os
import resource
import select
import signal
import sys
import tempfile
import time
import types
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _sources() -> dict:
    """Each course notebook's English source by its reference name, read from pyproject.toml's course config."""
    from builder.config import load_course

    return {nb.reference: nb.source for nb in load_course(ROOT).notebooks}


SOURCES = _sources()
BUDGET_BYTES = 1 << 30  # the allocation budget of issue 12
ADDRESS_SLACK = 1 << 29  # address space allowed above the budget before the limit bites (stacks, arenas)
CALL_SECONDS = 10.0  # a single call that takes longer is a finding
CAPTURES = 4  # calls recorded per function while the notebook runs
CAPTURE_BYTES = 4 << 20  # arguments bigger than this are not recorded
HYPOTHESIS_EXAMPLES = 12  # drawn calls per function, on top of the fixed catalogue
ALLOWED = (TypeError, ValueError, FloatingPointError)
# Functions whose calls would leave the process (pip, network): never fuzzed, with the reason.
NOT_FUZZED = {"install_missing": "runs pip for missing packages"}
# Exceptions that are a function's verdict, not a crash: the checks exist to raise them.
VERDICTS = {"*": ("ContractViolation", "CheckFailed"), "expect_raises": ("AssertionError",),
            "Reference.check": ("AssertionError",), "Reference.assert_all_used": ("AssertionError",),
            "verify_sha256": ("ReferenceChecksumError",), "load_reference": ("ReferenceChecksumError",)}
# A function named like a check (check_*, ...) fails with AssertionError by design: that is its verdict too.
CHECK_PREFIXES = ("check_", "expect", "contract_")


def _double(x):
    """A toy exercise solution for the check_exercise baseline: twice x."""
    return 2 * x


def _double_contract(implementation):
    """A toy contract for the check_exercise baseline: implementation(3) must be 6."""
    if implementation(3) != 6:
        raise AssertionError("double(3) is 6")
    return {"checked": 1}


def _exercise_namespace() -> dict:
    """A small notebook namespace: one exercise's reference source and two outcomes."""
    return {"REFERENCE_SOURCES": {"Exercise 1": "def double(x):\n    return 2 * x\n"},
            "EXERCISE_OUTCOMES": {"Exercise 1": "passed", "Exercise 2": "double is still a stub"}}


def _reference_namespace() -> dict:
    """A namespace whose frozen values were all used, as the last cell's ``globals()`` holds them."""
    from builder.contracts.frozen import Reference

    reference = Reference({"a": 1}, "references/toy.json")
    reference.value("a")
    return {"REFERENCE": reference, "REFERENCE_SOURCE": "references/toy.json"}


# Baseline calls for public functions that the notebook never calls with copyable arguments (a namespace is
# the notebook's globals(), which cannot be copied): name -> (args, kwargs).
BASELINES: dict[str, tuple[tuple, dict]] = {
    "require_budget": (("a mask", (64, 64)), {}),
    "require_finite_result": (("a scan", [1.0, 2.0], "products beyond 1e308"), {}),
    "log_tick_label": ((1e6,), {}),  # called by matplotlib while drawing, never by a cell
    "require_mask": (("mask", [[True, False], [True, True]]), {}),  # cells pass it masks built on the fly
    "expect_close": (("one half is 0.5", 0.5, 0.5), {}),  # a notebook may call it only on values the recorder cannot copy
    "require_namespace": ((_exercise_namespace(), "Exercise 1"), {}),
    "ContractViolation": (("double(3) is 6", "x=3", "6", "5", "multiply by 2, do not add 2"), {}),
    "use_reference": (("Exercise 1", _exercise_namespace(), "a test stands in"), {}),
    "exercises_on_reference": ((_exercise_namespace(),), {}),
    "check_exercise": (("Exercise 1", _double_contract, _double, _exercise_namespace()), {}),
    "show_reference": (("Exercise 1", _exercise_namespace()), {}),
    "report_section": (("Section 1", _exercise_namespace()), {}),
    "exercise_summary": ((_exercise_namespace(),), {}),
    "in_language": (("the usual cause",), {}),  # called inside the checks with each contract's own texts
    "key_label": (("Exercise 3",), {}),  # called by show_reference with what the student typed
    "report_references": ((_reference_namespace(),), {}),  # the last cell passes globals(), which cannot be copied
}


# Baseline calls of methods the notebooks never call, on an instance built without arguments: name -> (class, args, kwargs).
OWNED_BASELINES: dict[str, tuple[str, tuple, dict]] = {
    "CapstoneConfig.replace": ("CapstoneConfig", (), {"n_layers": 1}),  # 5.2 builds its one config directly
}


# Baseline calls built from the notebook's own classes (a small model, a few steps), for functions whose only
# call in a notebook trains for seconds: name -> function of the namespace giving (args, kwargs).
BUILT_BASELINES = {
    "train_capstone": lambda ns: ((ns["CapstoneConfig"](), 3), {}),
    "fit_induction": lambda ns: ((ns["CapstoneLM"](ns["CapstoneConfig"]()), ns["train_step"], 3, 0), {}),
}


def _module3_baselines() -> None:
    """Module 3's AdamW is built from ``model.parameters()``, a generator the recorder cannot copy: a small list instead."""
    import torch

    BASELINES["AdamW"] = (([torch.zeros(3, requires_grad=True)],), {"lr": 0.1})


def _figure_baselines() -> None:
    """show_figure encodes its pixels with png_bytes only inside a kernel, never when the source runs as a script."""
    import numpy as np

    from matplotlib.figure import Figure

    BASELINES["png_bytes"] = ((np.full((2, 3, 4), 255, dtype=np.uint8),), {})
    labelled = Figure(figsize=(4, 3))
    labelled.text(0.5, 0.5, "a label", fontsize=10)
    BASELINES["shown_text_pt"] = ((labelled,), {})


_module3_baselines()
_figure_baselines()


def _module3_size_cases(args: tuple, kwargs: dict) -> list:
    """Module 3's attention on 20,000 tokens: every argument is valid, yet the scores alone would take gigabytes."""
    import torch

    long = torch.zeros(20_000, args[0].shape[-1], dtype=args[0].dtype)  # (T, d_k), T = 20,000
    return [("q=k=v of 20,000 tokens (scores over the budget)", (long, long, long), {}, True, False)]


# Calls that one-argument mutations cannot reach (several sizes at once), per notebook and function name.
SIZE_CASES = {("module3", "scaled_dot_product_attention"): _module3_size_cases}


class CallTimeout(BaseException):
    """Raised by the alarm inside a call that ran past CALL_SECONDS (a BaseException: notebook code cannot swallow it)."""


# ---- running the notebook once, recording calls -------------------------------------------------


@dataclass
class Notebook:
    """A notebook's namespace after a full run, and the recorded calls of its functions."""

    path: Path
    namespace: dict
    calls: dict  # code object -> list of (args, kwargs, self or None)
    seconds: float


def _size(value, depth: int = 0) -> int:
    """Rough bytes held by a value (arrays, tensors, modules, containers one level deep)."""
    import numpy as np
    import torch

    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement()
    if isinstance(value, torch.nn.Module):
        return sum(_size(p) for p in value.parameters())
    if depth < 2 and isinstance(value, (list, tuple)):
        return sum(_size(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, dict):
        return sum(_size(v, depth + 1) for v in value.values())
    return 64


def _frame_call(frame) -> tuple[tuple, dict, object]:
    """The (args, kwargs, self) a frame was called with, from its code object's argument layout."""
    code = frame.f_code
    local = frame.f_locals
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    args = [local[n] for n in names[:n_pos]]
    kwargs = {n: local[n] for n in names[n_pos:n_pos + n_kw]}
    extra = n_pos + n_kw
    if code.co_flags & inspect.CO_VARARGS:
        args += list(local[names[extra]])
        extra += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(local[names[extra]])
    owner = None
    if names[:1] == ("self",) and n_pos:
        owner, args = args[0], args[1:]
        if code.co_name == "__init__":
            owner = None  # half built: the constructor makes its own
    return tuple(args), kwargs, owner


def run_notebook(path: Path) -> Notebook:
    """Execute a notebook source as a script in-process, recording the first calls of its functions."""
    import matplotlib

    matplotlib.use("Agg")
    filename = str(path)
    calls: dict = defaultdict(list)

    def hook(frame, event, arg):
        if event != "call" or frame.f_code.co_filename != filename:
            return
        recorded = calls[frame.f_code]
        if len(recorded) >= CAPTURES:
            return
        try:
            args, kwargs, owner = _frame_call(frame)
            if _size(args) + _size(kwargs) + _size(owner) <= CAPTURE_BYTES:
                recorded.append(copy.deepcopy((args, kwargs, owner)))
        except Exception:  # an argument that cannot be copied: record nothing for this call
            pass

    namespace = {"__name__": "__main__", "__file__": filename}
    code = compile(path.read_text(encoding="utf-8"), filename, "exec")
    cwd = os.getcwd()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="course-fuzz-") as tmp, contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.chdir(tmp)
        sys.setprofile(hook)
        try:
            exec(code, namespace)
        finally:
            sys.setprofile(None)
            os.chdir(cwd)
    import matplotlib.pyplot as plt

    plt.close("all")
    return Notebook(path, namespace, dict(calls), time.perf_counter() - start)


# ---- the public functions -----------------------------------------------------------------------


@dataclass
class Target:
    """One public function or method: its name, how to call it, and its recorded calls."""

    name: str
    code: types.CodeType
    function: object  # the plain function (for the signature)
    cls: type | None = None
    constructor: bool = False
    recorded: list = field(default_factory=list)

    def call(self, args: tuple, kwargs: dict, owner):
        """Call the function, the constructor, or the method on ``owner``."""
        if self.constructor:
            return self.cls(*args, **kwargs)
        if self.cls is not None:
            return getattr(owner, self.function.__name__)(*args, **kwargs)
        return self.function(*args, **kwargs)


def _defined_in(function, filename: str) -> bool:
    """True for a plain function whose code lives in ``filename``."""
    return isinstance(function, types.FunctionType) and function.__code__.co_filename == filename


def public_targets(nb: Notebook) -> tuple[list[Target], list[str]]:
    """Every public function, constructor and public method defined by the notebook, and the skipped ones."""
    filename = str(nb.path)
    targets, skipped = [], []
    for name, value in nb.namespace.items():
        if name.startswith("_"):
            continue
        if _defined_in(value, filename):
            if name in NOT_FUZZED:
                skipped.append(f"{name} ({NOT_FUZZED[name]})")
                continue
            targets.append(Target(name, value.__code__, value, recorded=nb.calls.get(value.__code__, [])))
        elif isinstance(value, type) and getattr(value, "__module__", None) == "__main__":
            members = {k: v for k, v in vars(value).items() if _defined_in(v, filename)}
            if not members:
                skipped.append(f"{name} (a class with no methods of its own, e.g. an exception)")
                continue
            init = members.get("__init__")
            if init is not None:
                targets.append(Target(name, init.__code__, init, value, True, nb.calls.get(init.__code__, [])))
            for method, function in members.items():
                if not method.startswith("_"):
                    targets.append(Target(f"{name}.{method}", function.__code__, function, value,
                                          recorded=nb.calls.get(function.__code__, [])))
    return targets, skipped


# ---- judging one call ---------------------------------------------------------------------------


def has_nan(value, depth: int = 0) -> bool:
    """True when a result holds a NaN anywhere (arrays, tensors, floats, containers)."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        return bool(value.is_floating_point() or value.is_complex()) and value.device.type != "meta" and bool(torch.isnan(value.detach()).any())
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc" and bool(np.isnan(value).any())
    if isinstance(value, (float, complex)):
        return value != value
    if depth < 3 and isinstance(value, (list, tuple)):
        return any(has_nan(v, depth + 1) for v in value)
    if depth < 3 and isinstance(value, dict):
        return any(has_nan(v, depth + 1) for v in value.values())
    return False


def _vm_bytes() -> int:
    """This process's virtual memory size (VmSize), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def bounded(seconds: float):
    """Limit one call: an alarm after ``seconds`` and an address space of the current size plus the budget."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _vm_bytes() + BUDGET_BYTES + ADDRESS_SLACK
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)

    def alarm(signum, frame):
        raise CallTimeout()

    previous = signal.signal(signal.SIGALRM, alarm)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.5)  # repeats: an alarm swallowed (e.g. in a gc callback) fires again
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


def _allocation_failure(exc: BaseException) -> bool:
    """True when an exception is an allocator refusing memory (NumPy's MemoryError, torch's RuntimeError)."""
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and ("alloc" in text or "memory" in text))


@dataclass(frozen=True)
class Finding:
    """A call that broke a property."""

    kind: str  # "crash", "over budget", "timeout", "nan from nan-free input", "silently accepted"
    function: str
    mutation: str
    detail: str


def judge(target: Target, args, kwargs, owner, mutation: str, nan_free: bool, wrong_type: bool, limit: bool = True) -> Finding | None:
    """Make one call and return the finding it produced, if any (``limit``: bound it in-process, as for baselines)."""
    import matplotlib.pyplot as plt

    try:
        with bounded(CALL_SECONDS) if limit else contextlib.nullcontext(), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = target.call(args, kwargs, owner)
    except CallTimeout:
        return Finding("timeout", target.name, mutation, f"more than {CALL_SECONDS:g} s")
    except ALLOWED:
        return None
    except BaseException as exc:  # noqa: BLE001 - every other exception is the finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        if type(exc).__name__ in VERDICTS["*"] + VERDICTS.get(target.name, ()):
            return None
        if isinstance(exc, AssertionError) and target.name.startswith(CHECK_PREFIXES):
            return None
        kind = "over budget" if _allocation_failure(exc) else "crash"
        return Finding(kind, target.name, mutation, f"{type(exc).__name__}: {_one_line(exc)}")
    finally:
        plt.close("all")
    if nan_free and has_nan(result):
        return Finding("nan from nan-free input", target.name, mutation, "the result holds NaN")
    if wrong_type:
        return Finding("silently accepted", target.name, mutation, f"returned {type(result).__name__}")
    return None


def _one_line(exc: BaseException) -> str:
    """An exception message on one short line."""
    text = " ".join(str(exc).split())
    return text[:160]


# ---- mutations of one argument ------------------------------------------------------------------


def array_mutations(value) -> list[tuple[str, object, bool]]:
    """(label, mutated value, wrong type) for a NumPy array."""
    import numpy as np
    import torch

    out = [("dtype int64", value.astype(np.int64), False), ("dtype float32", value.astype(np.float32), False),
           ("dtype complex", value.astype(np.complex128), False), ("dtype bool", value.astype(bool), False),
           ("rank +1", value[None], False), ("list", value.tolist(), False), ("string", "abc", True),
           ("None", None, True), ("scalar", np.float64(1.0), False)]
    if value.ndim:
        out += [("rank -1", value[0], False), ("empty last dim", value[..., :0], False),
                ("empty first dim", value[:0], False),
                ("mismatched shape", np.concatenate([value, value[..., :1]], axis=-1), False)]
    if value.dtype.kind in "fc" and value.size:
        nan, inf = value.copy(), value.copy()
        nan.flat[0], inf.flat[0] = np.nan, np.inf
        out += [("NaN", nan, False), ("inf", inf, False), ("negative", -value, False), ("zero", np.zeros_like(value), False),
                ("huge (x1e200)", value * 1e200, False), ("requires_grad tensor", torch.tensor(value, requires_grad=True), False)]
    if value.dtype.kind in "iu" and value.size:
        out += [("negative", -value - 1, False), ("huge (+2**40)", value + 2**40, False)]
    return out


def tensor_mutations(value) -> list[tuple[str, object, bool]]:
    """(label, mutated value, wrong type) for a torch tensor."""
    import torch

    v = value.detach().clone()
    out = [("rank +1", v[None], False), ("numpy array", v.numpy(), False), ("meta device", v.to("meta"), False),
           ("string", "abc", True), ("None", None, True), ("dtype int64", v.long(), False), ("dtype float16", v.half(), False)]
    if v.ndim:
        out += [("rank -1", v[0], False), ("empty last dim", v[..., :0], False), ("empty first dim", v[:0], False),
                ("mismatched shape", torch.cat([v, v[..., :1]], dim=-1), False)]
    if v.is_floating_point() and v.numel():
        nan, inf = v.clone(), v.clone()
        nan.view(-1)[0], inf.view(-1)[0] = float("nan"), float("inf")
        out += [("NaN", nan, False), ("inf", inf, False), ("negative", -v, False), ("zero", torch.zeros_like(v), False),
                ("huge (x1e30)", v * 1e30, False), ("requires_grad", v.clone().requires_grad_(True), False),
                ("dtype float64" if v.dtype != torch.float64 else "dtype float32", v.double() if v.dtype != torch.float64 else v.float(), False)]
    elif v.numel() and v.dtype == torch.bool:
        out += [("inverted", ~v, False), ("all False", torch.zeros_like(v), False)]
    elif v.numel():
        out += [("negative", -v - 1, False), ("huge (+2**40)", v + 2**40, False)]
    return out


def scalar_mutations(value) -> list[tuple[str, object, bool]]:
    """(label, mutated value, wrong type) for ints, floats, bools, strings and None."""
    if isinstance(value, bool):
        return [("string 'no'", "no", True), ("int 2", 2, True), ("None", None, True)]
    if isinstance(value, int):
        return [("zero", 0, False), ("negative", -1, False), ("plus one", value + 1, False), ("minus one", value - 1, False),
                ("huge 2**17", 2**17, False), ("huge 10**9", 10**9, False), ("huge 2**62", 2**62, False),
                ("float", value + 0.5, True), ("string", str(value), True), ("None", None, True)]
    if isinstance(value, float):
        return [("zero", 0.0, False), ("negative", -value if value else -1.0, False), ("NaN", math.nan, False),
                ("inf", math.inf, False), ("-inf", -math.inf, False), ("huge 1e308", 1e308, False),
                ("tiny 1e-308", 1e-308, False), ("string", str(value), True), ("None", None, True)]
    if isinstance(value, str):
        return [("string 'nope'", "nope", False), ("empty string", "", False), ("int", 3, True), ("None", None, True)]
    if value is None:
        return [("string", "abc", True)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [("empty sequence", type(value)(), False), ("negative element", type(value)([-1] + list(value[1:])), False),
                ("NaN element", type(value)([math.nan] + list(value[1:])), False), ("string", "abc", True)]
    return [("None", None, True)] if callable(value) or isinstance(value, (list, tuple, dict)) else []


def mutations_of(value) -> list[tuple[str, object, bool]]:
    """Every one-value mutation of an argument (casts of inf to int and the like are expected to warn)."""
    import numpy as np
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if isinstance(value, np.ndarray):
                return array_mutations(value)
            if isinstance(value, torch.Tensor):
                return tensor_mutations(value)
            return scalar_mutations(value)
        except Exception:  # noqa: BLE001 - a value these builders cannot vary (an odd dtype): no cases for it
            return []


def is_nan_free(args, kwargs) -> bool:
    """True when no argument holds a NaN."""
    return not any(has_nan(v) for v in list(args) + list(kwargs.values()))


# ---- the fuzz -----------------------------------------------------------------------------------


@dataclass
class Report:
    """Counts and findings of one notebook's fuzz."""

    notebook: str
    functions: int = 0
    fuzzed: int = 0
    calls: int = 0
    seconds: float = 0.0
    no_baseline: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    findings: list = field(default_factory=list)

    @property
    def failures(self) -> list[Finding]:
        """The findings the acceptance of issue 12 counts (silent acceptance is reported, not counted)."""
        return [f for f in self.findings if f.kind != "silently accepted"]

    def text(self, examples: int = 6, every: bool = False) -> str:
        """The findings report: counts, then each kind of finding with examples by function (``every``: all of them)."""
        lines = [f"{self.notebook}: {self.functions} public functions and methods, {self.fuzzed} fuzzed, "
                 f"{self.calls} calls in {self.seconds:.0f} s; {len(self.failures)} failing calls, "
                 f"{len(self.findings) - len(self.failures)} silently accepted"]
        if self.no_baseline:
            lines.append("  no baseline call (the notebook never calls them cleanly; add to BASELINES): " + ", ".join(self.no_baseline))
        if self.skipped:
            lines.append("  not fuzzed: " + "; ".join(self.skipped))
        by_kind = defaultdict(list)
        for f in self.findings:
            by_kind[f.kind].append(f)
        for kind in ("crash", "over budget", "timeout", "nan from nan-free input", "silently accepted"):
            found = by_kind.get(kind, [])
            if not found:
                continue
            functions = Counter(f.function for f in found)
            lines.append(f"  {kind}: {len(found)} calls, {len(functions)} functions")
            if kind == "crash":
                types_ = Counter(f.detail.split(":")[0] for f in found)
                lines.append("    by exception: " + ", ".join(f"{k} {v}" for k, v in types_.most_common()))
            seen = set()
            for f in found:
                if every:
                    lines.append(f"    {f.function}({f.mutation}) -> {f.detail}")
                    continue
                if f.function in seen or len(seen) >= examples:
                    continue
                seen.add(f.function)
                lines.append(f"    {f.function}({f.mutation}) -> {f.detail}")
            rest = sorted(set(functions) - seen)
            if rest and not every:
                lines.append(f"    also: {', '.join(rest)}")
        return "\n".join(lines)


def baseline_for(target: Target, nb: Notebook):
    """The smallest recorded call that succeeds, NaN-free when its input is; None when there is none."""
    candidates = list(target.recorded)
    if target.name in BASELINES:
        args, kwargs = BASELINES[target.name]
        candidates.insert(0, (args, kwargs, None))
    if target.name in BUILT_BASELINES and all(n in nb.namespace for n in ("CapstoneConfig", "CapstoneLM", "train_step")):
        candidates.insert(0, (*BUILT_BASELINES[target.name](nb.namespace), None))
    if target.name in OWNED_BASELINES and OWNED_BASELINES[target.name][0] in nb.namespace:
        owner, args, kwargs = OWNED_BASELINES[target.name]
        candidates.insert(0, (args, kwargs, nb.namespace[owner]()))
    for args, kwargs, owner in sorted(candidates, key=lambda c: _size(c[0]) + _size(c[1])):
        finding = judge(target, *copy.deepcopy((args, kwargs, owner)), "baseline", is_nan_free(args, kwargs), False)
        if finding is None and _succeeds(target, args, kwargs, owner):
            return args, kwargs, owner
    return None


def _succeeds(target: Target, args, kwargs, owner) -> bool:
    """True when the call returns at all (within the time and memory bounds)."""
    try:
        with bounded(CALL_SECONDS), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target.call(*copy.deepcopy((args, kwargs, owner)))
        return True
    except BaseException:  # noqa: BLE001
        return False


def cases(args: tuple, kwargs: dict):
    """Every one-argument mutation of a call: (label, args, kwargs, nan_free, wrong_type)."""
    slots = [("arg", i, v) for i, v in enumerate(args)] + [("kw", k, v) for k, v in kwargs.items()]
    for where, key, value in slots:
        for label, mutated, wrong_type in mutations_of(value):
            new_args, new_kwargs = list(args), dict(kwargs)
            if where == "arg":
                new_args[key] = mutated
            else:
                new_kwargs[key] = mutated
            name = f"#{key}" if where == "arg" else key
            nan_free = label not in ("NaN", "inf", "NaN element", "-inf") and is_nan_free(new_args, new_kwargs)
            yield f"{name}={label}", tuple(new_args), new_kwargs, nan_free, wrong_type
    yield from joint_huge_case(args, kwargs)


def joint_huge_case(args: tuple, kwargs: dict):
    """Every float array argument times 1e200 at once (Q and K both huge overflow q . k, which one alone may not)."""
    import numpy as np

    def huge(value):
        is_float_array = isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size
        return value * 1e200 if is_float_array else value

    floats = [v for v in list(args) + list(kwargs.values()) if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.size]
    if len(floats) >= 2:
        new_args, new_kwargs = tuple(huge(v) for v in args), {k: huge(v) for k, v in kwargs.items()}
        yield "all float arrays=huge (x1e200)", new_args, new_kwargs, is_nan_free(new_args, new_kwargs), False


def drawn_cases(args: tuple, kwargs: dict) -> list:
    """Hypothesis-drawn integers and floats for the numeric arguments (derandomized), as cases."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    slots = [(i, v) for i, v in enumerate(args) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    slots += [(k, v) for k, v in kwargs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    drawn: list = []
    if not slots:
        return drawn

    def value_for(slot):
        """A strategy for one numeric slot: any 64-bit integer, or any finite float."""
        key, value = slot
        strategy = st.integers(-(2**63), 2**63) if isinstance(value, int) else st.floats(allow_nan=False)
        return st.tuples(st.just(key), strategy)

    @settings(derandomize=True, max_examples=HYPOTHESIS_EXAMPLES, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(slots).flatmap(value_for))
    def draw(pair):
        """Keep one drawn case."""
        key, value = pair
        new_args, new_kwargs = list(args), dict(kwargs)
        if isinstance(key, int):
            new_args[key] = value
        else:
            new_kwargs[key] = value
        name = f"#{key}" if isinstance(key, int) else key
        drawn.append((f"{name}={value!r} (drawn)", tuple(new_args), new_kwargs, is_nan_free(new_args, new_kwargs), False))

    draw()
    return drawn


def run_cases(target: Target, owner, todo: list) -> list[Finding]:
    """Run the cases in forked children, one call at a time; a call that hangs in C code or kills its process is a finding.

    The child limits its own address space to its size plus the budget and reports on a pipe before and
    after each call; when a call runs past CALL_SECONDS the parent kills the child and carries on in a new one.
    """
    import json

    findings, start = [], 0
    while start < len(todo):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run from `start`, report each call
            os.close(read)
            _child(target, owner, todo, start, write)
        os.close(write)
        current, done, buffer = start, False, b""
        while True:
            line, buffer = _read_line(read, buffer, CALL_SECONDS)
            if line is None or line == "":
                label = todo[current][0] if current < len(todo) else "?"
                kind, detail = ("timeout", f"more than {CALL_SECONDS:g} s") if line is None else ("crash", "the process died")
                findings.append(Finding(kind, target.name, label, detail))
                break
            tag, _, rest = line.partition(" ")
            if tag == "start":
                current = int(rest)
            elif tag == "finding":
                findings.append(Finding(**json.loads(rest)))
            elif tag == "end":
                done = True
                break
        os.close(read)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        start = len(todo) if done else current + 1
    return findings


def _read_line(fd: int, buffer: bytes, seconds: float) -> tuple[str | None, bytes]:
    """The next line from a pipe: None when nothing arrives within ``seconds``, "" at end of file."""
    while b"\n" not in buffer:
        ready, _, _ = select.select([fd], [], [], seconds)
        if not ready:
            return None, buffer
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return "", buffer
        buffer += chunk
    line, _, buffer = buffer.partition(b"\n")
    return line.decode(), buffer


def _child(target: Target, owner, todo: list, start: int, fd: int) -> None:
    """Forked child of ``run_cases``: make the calls from ``start`` on, write one line per event, never return."""
    import json
    from dataclasses import asdict

    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + BUDGET_BYTES + ADDRESS_SLACK, hard))
        out = os.fdopen(fd, "w", buffering=1)
        for i in range(start, len(todo)):
            label, args, kwargs, nan_free, wrong_type = todo[i]
            out.write(f"start {i}\n")
            finding = judge(target, *copy.deepcopy((args, kwargs, owner)), label, nan_free, wrong_type, limit=False)
            if finding:
                out.write("finding " + json.dumps(asdict(finding)) + "\n")
        out.write("end\n")
        out.flush()
    finally:
        os._exit(0)


def fuzz(nb: Notebook, name: str, progress: bool = False, only: tuple = ()) -> Report:
    """Fuzz every public function of a run notebook (``only``: those whose names match one of these patterns)."""
    import fnmatch

    import torch

    torch.set_num_threads(1)
    targets, skipped = public_targets(nb)
    if only:
        targets = [t for t in targets if any(fnmatch.fnmatchcase(t.name, pattern) for pattern in only)]
    report = Report(name, functions=len(targets), skipped=skipped)
    start = time.perf_counter()
    for target in targets:
        if progress:
            print(f"{name}: {target.name} ({report.calls} calls so far, {time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
        baseline = baseline_for(target, nb)
        if baseline is None:
            report.no_baseline.append(target.name)
            continue
        report.fuzzed += 1
        args, kwargs, owner = baseline
        todo = list(cases(args, kwargs)) + drawn_cases(args, kwargs)
        todo += SIZE_CASES.get((name, target.name), lambda *_: [])(args, kwargs)
        report.calls += len(todo)
        report.findings += run_cases(target, owner, todo)
    report.seconds = time.perf_counter() - start
    return report


@functools.cache
def notebook_report(key: str, progress: bool = False, only: tuple = ()) -> Report:
    """Run and fuzz one notebook (a key of ``SOURCES``, such as ``module5_1``), once per process."""
    return fuzz(run_notebook(SOURCES[key]), key, progress, only)


def main(argv: list[str]) -> int:
    """Print the findings report of each named notebook; 1 when a call failed a property.

    ``python -m tests.fuzz [NOTEBOOK ...] [--only PATTERN ...] [--all]``: ``--only`` fuzzes the
    functions whose names match a pattern (``'MultiHead*'``), ``--all`` prints every finding.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=main.__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help=f"one of {', '.join(sorted(SOURCES))} (default: all)")
    parser.add_argument("--only", action="append", default=[], help="fnmatch pattern of function names (repeatable)")
    parser.add_argument("--all", action="store_true", help="print every finding, not a few per kind")
    options = parser.parse_args(argv)
    unknown = sorted(set(options.notebooks) - set(SOURCES))
    if unknown:
        parser.error(f"unknown notebook {', '.join(unknown)}; choose from {', '.join(sorted(SOURCES))}")
    failing = 0
    for key in options.notebooks or sorted(SOURCES):
        report = notebook_report(key, True, tuple(options.only))
        print(report.text(examples=int(os.environ.get("FUZZ_EXAMPLES", "8")), every=options.all), flush=True)
        failing += len(report.failures)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
