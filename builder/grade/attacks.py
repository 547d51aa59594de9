"""Submissions that attack the grader, and honest ones written in unusual ways, built from a student edition.

Every attack targets Module 3's Exercise 2 (``causal_allowed``) and must score 0 there without
changing anyone else's results; every honest variant must score full marks. The tests grade them
in one batch, and ``python -m builder grade`` on them gives the table of the issue.
"""

import copy
import functools

import nbformat

from . import submission, variants

LABEL = "Exercise 2"
WRONG = "    return torch.zeros(t_q, t_k, dtype=torch.bool)\n"
SIGNATURE = "def causal_allowed(t_q, t_k, *, query_offset=0):\n"
SECRET = "CLASSMATE-SECRET-7f3a"  # a comment in another submission that no attacker may read

ATTACKS = {
    "default_argument": "def causal_allowed(t_q, t_k, *, query_offset=0, _r=causal_allowed):\n"
                        "    return _r(t_q, t_k, query_offset=query_offset)\n",
    "embedded_references": "import sys, pathlib\n" + SIGNATURE +
        "    g = globals()\n"
        "    for key in ('REFERENCE_SOURCES', 'REFERENCE_SOLUTIONS'):\n"
        "        found = g.get(key, {}).get('Exercise 2')\n"
        "        if isinstance(found, str):\n"
        "            exec(found, g)\n"
        "            return g['causal_allowed'](t_q, t_k, query_offset=query_offset)\n"
        "    root = pathlib.Path(sys.modules['builder'].__file__).parents[1]\n"
        "    text = (root / 'notebooks' / 'module3_basic_transformer.py').read_text()\n"
        "    start = text.index('def causal_allowed')\n"
        "    space = {**g}\n"
        "    exec(text[start:text.index('# %%', start)], space)\n"
        "    return space['causal_allowed'](t_q, t_k, query_offset=query_offset)\n",
    "judge_through_sys_modules": "import sys\n" + SIGNATURE +
        "    passing = lambda *a, **k: {'passed': True, 'output': 'PASS: every contract property holds.'}\n"
        "    for name, module in list(sys.modules.items()):\n"
        "        if name.startswith('builder') or name == '__main__':\n"
        "            for attr in ('verdict', 'run_check', 'judge', 'check_exercise', 'check_causal_mask_contract'):\n"
        "                if hasattr(module, attr):\n"
        "                    setattr(module, attr, passing)\n" + WRONG,
    "pass_into_result_pipe": "import os\n" + SIGNATURE +
        "    fake = b'{\"passed\": true, \"output\": \"PASS: every contract property of `causal_allowed` holds.\"}'\n"
        "    for fd in range(3, 256):\n"
        "        try:\n"
        "            os.write(fd, fake)\n"
        "        except OSError:\n"
        "            pass\n"
        "    for path in [f'/proc/{os.getppid()}/fd/{n}' for n in range(3, 64)]:\n"
        "        try:\n"
        "            with open(path, 'wb') as pipe:\n"
        "                pipe.write(fake)\n"
        "        except OSError:\n"
        "            pass\n" + WRONG,
    "patch_torch_from_class_bodies": "import torch\n"
        "class _Meta(type):\n"
        "    def __new__(meta, *args):\n"
        "        torch.equal = lambda *a, **k: True\n"
        "        return super().__new__(meta, *args)\n"
        "class _Base:\n"
        "    def __init_subclass__(cls, **kwargs):\n"
        "        torch.allclose = lambda *a, **k: True\n"
        "class _Patch(_Base, metaclass=_Meta):\n"
        "    torch.Tensor.__eq__ = lambda a, b: torch.ones((), dtype=torch.bool)\n" + SIGNATURE + WRONG,
    "tensor_subclass": "import torch\n"
        "class Always(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return True\n" + SIGNATURE +
        "    return torch.zeros(t_q, t_k, dtype=torch.bool).as_subclass(Always)\n",
    "own_eq_object": SIGNATURE +
        "    class Equal:\n"
        "        shape = (t_q, t_k)\n"
        "        dtype = torch.bool\n"
        "        def __eq__(self, other):\n"
        "            return True\n"
        "    return Equal()\n",
    "contract_close_through_globals": SIGNATURE +
        "    g = globals()\n"
        "    for name in list(g):\n"
        "        if name.startswith(('contract_', 'check_')):\n"
        "            g[name] = lambda *a, **k: None\n" + WRONG,
    "double_fork_survivor": "import os, time, glob\n" + SIGNATURE +
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(3)\n"
        "            for path in glob.glob(OUT + '/*/results.json'):\n"
        "                open(path, 'w').write('{\"score\": 0}')\n"
        "            open(MARKER, 'w').write('escaped')\n"
        "            os._exit(0)\n"
        "        os._exit(0)\n" + WRONG,
    "parent_killer": "import os, signal\n" + SIGNATURE +
        "    os.kill(os.getppid(), signal.SIGKILL)\n" + WRONG,
    "read_classmates": "import os, glob\n" + SIGNATURE +
        "    seen = []\n"
        "    places = [FOLDER + '/**', '/tmp/grade-*/**', '/proc/[0-9]*/cmdline', '/proc/[0-9]*/environ']\n"
        "    for path in [p for pattern in places for p in glob.glob(pattern, recursive=True)][:5000]:\n"
        "        try:\n"
        "            with open(path, 'rb') as handle:\n"
        "                data = handle.read(1 << 20)\n"
        "        except OSError:\n"
        "            continue\n"
        "        if b'CLASSMATE' in data:\n"
        "            seen.append(data[data.index(b'CLASSMATE'):][:40].decode('latin-1'))\n"
        "    raise ValueError('found: ' + ' '.join(seen))\n",
    "surrogate_message": SIGNATURE + "    raise ValueError('\\udc80 broken \\ud800 text')\n",
}

# Honest ways of writing a correct Exercise 2, each of which scored 0 before.
SOLUTION_BODY = ("    query_position = query_offset + torch.arange(t_q)[:, None]  # (t_q, 1)\n"
                 "    return torch.arange(t_k)[None, :] <= query_position           # (t_q, t_k)\n")
GUARDS = ("    t_q = require_int('t_q', t_q, minimum=1)\n    t_k = require_int('t_k', t_k, minimum=1)\n"
          "    query_offset = require_int('query_offset', query_offset, minimum=0)\n"
          "    if query_offset + t_q > t_k:\n        raise ValueError(f'need at least {query_offset + t_q} keys, got t_k={t_k}')\n")
HONEST = {
    "magic_line": ("%matplotlib inline\n# Exercise 2: my answer\n" + SIGNATURE + GUARDS + SOLUTION_BODY, None),
    "time_magic_first": ("%%time\n# Exercise 2: my answer\n" + SIGNATURE + GUARDS + SOLUTION_BODY, None),
    "comment_above_label": ("# my attempt, second try\n# Exercise 2: my answer\n" + SIGNATURE + GUARDS + SOLUTION_BODY, None),
    "lower_case_label": ("# exercise 2 - my answer\n" + SIGNATURE + GUARDS + SOLUTION_BODY, None),
    "instructions_deleted": (SIGNATURE + GUARDS + SOLUTION_BODY, None),
    "helper_and_constant_in_own_cell": (
        SIGNATURE + GUARDS + "    return positions(t_k, FIRST)[None, :] <= positions(t_q, query_offset)[:, None]\n",
        "FIRST = 0\n\ndef positions(n, start):\n    return start + torch.arange(n)\n"),
    "helper_named_like_a_course_variable": (
        SIGNATURE + GUARDS + "    return grid(t_k)[None, :] <= grid(t_q, query_offset)[:, None]\n",
        "def grid(n, start=0):\n    return start + torch.arange(n)\n"),
}


# Contract mining: rebuild every function nested in a contract (its reference, its expected values) from code
# objects, in the student's namespace or in builder/contracts/ on disk, and answer with the first that runs.
MINER = """import pathlib as _pathlib, sys as _sys, types as _types
def _mined_functions():
    space, found = globals(), []
    def walk(code, origin):
        for const in code.co_consts:
            if isinstance(const, _types.CodeType):
                cells = tuple(_types.CellType(None) for _ in const.co_freevars)
                found.append((origin, _types.FunctionType(const, space, const.co_name, None, cells)))
                walk(const, origin)
    for name, value in list(space.items()):
        if isinstance(value, _types.FunctionType) and ("contract" in name or name.startswith("check_")):
            walk(value.__code__, name)
    for module in [m for m in list(_sys.modules.values()) if getattr(m, "__name__", "").startswith("builder")][:1]:
        folder = _pathlib.Path(module.__file__).resolve().parent / "contracts"
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
            try:
                walk(compile(path.read_text(), str(path), "exec"), path.name)
            except (OSError, SyntaxError):
                pass
    return found
def _mine(*args, **kwargs):
    found = _mined_functions()
    usual = ("reference", "rule", "expected", "dense", "windowed", "phi", "quadratic", "loop", "expanded")
    for origin, function in sorted(found, key=lambda item: item[1].__name__ not in usual):
        code = function.__code__
        if code.co_argcount == len(args) and set(kwargs) <= set(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]):
            try:
                return function(*args, **kwargs)
            except Exception:
                continue
    raise ValueError("mined: " + " ".join(sorted({origin for origin, _ in found})) + " (end)")
"""


def mining(book) -> nbformat.NotebookNode:
    """The student edition with every exercise answered by contract mining: each required name calls ``_mine``."""
    nb = copy.deepcopy(variants.shipped(book))
    for label, names in _exercise_names(book).items():
        index = _exercise_index(nb, label)
        stubs = "".join(f"def {name}(*args, **kwargs):\n    return _mine(*args, **kwargs)\n" for name in names)
        nb.cells[index].source = f"# {label}: mined\n" + MINER + stubs
    return nb


def _exercise_names(book) -> dict[str, tuple[str, ...]]:
    """Each exercise's label and required names, from the course source."""
    from .. import pairing, student

    return {e.label: e.names for e in student.exercises(pairing.read_source(book.source.read_text(encoding="utf-8")))}


@functools.cache
def _solved(book) -> nbformat.NotebookNode:
    """The solved student edition, built once per notebook (``replaced`` copies it)."""
    return variants.solved(book)


def _exercise_index(nb: nbformat.NotebookNode, label: str) -> int:
    """Index of the exercise cell ``label`` (by tag and label)."""
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "exercise" in c.metadata.get("tags", [])
                and submission._label(c.source) == label)


def replaced(nb: nbformat.NotebookNode, source: str, own: str | None = None, label: str = LABEL) -> nbformat.NotebookNode:
    """A copy with exercise ``label``'s cell source replaced, and optionally a new cell of the student's own just before it."""
    nb = copy.deepcopy(nb)
    index = _exercise_index(nb, label)
    nb.cells[index].source = source
    if own is not None:
        nb.cells.insert(index, nbformat.v4.new_code_cell(own))
    return nb


def attack(book, name: str, *, out: str = "/nonexistent", marker: str = "/nonexistent", folder: str = "/nonexistent") -> nbformat.NotebookNode:
    """The solved student edition with Exercise 2 replaced by attack ``name`` (paths it uses filled in)."""
    source = f"# Exercise 2: attack {name}\nOUT = {out!r}\nMARKER = {marker!r}\nFOLDER = {folder!r}\n" + ATTACKS[name]
    return replaced(_solved(book), source)


def honest(book, name: str) -> nbformat.NotebookNode:
    """The solved student edition with Exercise 2 written in the honest way ``name``."""
    source, own = HONEST[name]
    return replaced(_solved(book), source, own)


def classmate(book) -> nbformat.NotebookNode:
    """A correct submission whose Exercise 2 cell carries a secret comment."""
    nb = copy.deepcopy(_solved(book))
    index = _exercise_index(nb, LABEL)
    nb.cells[index].source = f"# {SECRET}\n" + nb.cells[index].source
    return nb
