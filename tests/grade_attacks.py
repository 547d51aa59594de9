"""Submissions that attack the grader, and honest ones written in unusual ways, built from a student edition.

Every attack targets Module 3's Exercise 2 (``causal_allowed``) and must score 0 there without
changing anyone else's results; every honest variant must score full marks. The tests grade them
in one batch, and ``python -m builder grade`` on them gives the table of the issue.
"""

import copy
import functools

import nbformat

from builder.grade import submission
from tools import grade_variants as variants

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
    # issue 38: the verdict's text rewritten on its way out of the student's process
    "spoofed_verdict": "import sys\n"
        "_wire = sys.modules['builder.grade.wire']\n"
        "_send = _wire.send\n"
        "_spoof = lambda sock, header, blobs=None: _send(sock, dict(header, failed='PASS: every contract property of "
        "`causal_allowed` holds.') if 'failed' in header else header, blobs)\n"
        "_wire.send = _spoof\n" + SIGNATURE + WRONG,
    # plant code in the grader's own files, which later judges would import
    "plant_in_the_grader": "import sys, pathlib\n" + SIGNATURE +
        "    for name in [n for n in list(sys.modules) if n.startswith('builder.grade.')]:\n"
        "        try:\n"
        "            with open(sys.modules[name].__file__, 'a') as handle:\n"
        "                handle.write('\\n# planted by a submission\\n')\n"
        "        except (OSError, TypeError, AttributeError):\n"
        "            pass\n" + WRONG,
    # every process its uid may signal: classmates running as the same user, the grader
    "kill_every_process": "import os, signal\n" + SIGNATURE +
        "    for pid in [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
        "        if pid != os.getpid():\n"
        "            try:\n"
        "                os.kill(pid, signal.SIGKILL)\n"
        "            except OSError:\n"
        "                pass\n"
        "    try:\n"
        "        os.kill(-1, signal.SIGKILL)\n"
        "    except OSError:\n"
        "        pass\n" + WRONG,
    # stop the course process (and then itself): a stopped process must be killed like a hung one
    "sigstop": "import os, signal\n" + SIGNATURE +
        "    for pid in (os.getppid(), os.getpgid(0)):\n"
        "        try:\n"
        "            os.kill(pid, signal.SIGSTOP)\n"
        "        except OSError:\n"
        "            pass\n"
        "    os.kill(os.getpid(), signal.SIGSTOP)\n" + WRONG,
    # fill the shared temporary folder, which nobody cleans
    "fill_tmp": "import os, tempfile\n" + SIGNATURE +
        "    chunk = b'x' * (1 << 20)\n"
        "    for folder in {tempfile.gettempdir(), '/tmp', '/var/tmp', '/dev/shm', os.getcwd()}:\n"
        "        try:\n"
        "            with open(os.path.join(folder, 'fill-' + str(os.getpid())), 'wb') as handle:\n"
        "                for _ in range(400):\n"
        "                    handle.write(chunk)\n"
        "        except OSError:\n"
        "            pass\n" + WRONG,
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
    "functools_partial_constant": (
        "import functools\nrow = functools.partial(torch.arange, dtype=torch.long)\n" + SIGNATURE + GUARDS +
        "    return row(t_k)[None, :] <= (query_offset + row(t_q))[:, None]\n", None),
}

# Honest ways of writing other exercises of Module 3 (label, cell source, own cell or None), from issue 38.
OTHER_HONEST = {
    "helper_in_own_cell": ("Exercise 5", None, None),  # a copy of _require_hidden in a cell of the student's own (built below)
    "lowercase_constant_by_a_call": ("Exercise 1",
        "# Exercise 1: mine\nimport math\nln_base = math.log(10_000.0)\n"
        "def sinusoidal_encoding(length, d_model, *, base=10_000.0, dtype=torch.float64):\n"
        "    length = require_int('length', length, minimum=1)\n"
        "    d_model = require_int('d_model', d_model, minimum=2)\n"
        "    base = require_real('base', base, minimum=1.0, strict_minimum=True)\n"
        "    if d_model % 2:\n"
        "        raise ValueError(f'd_model must be even, got {d_model}')\n"
        "    if dtype not in (torch.float32, torch.float64):\n"
        "        raise TypeError(f'dtype must be torch.float32 or torch.float64, got {dtype}')\n"
        "    require_budget('the position table', (length, d_model), itemsize=2 * torch.finfo(dtype).bits // 8)\n"
        "    log_base = ln_base if base == 10_000.0 else math.log(base)\n"
        "    position = torch.arange(length, dtype=dtype)[:, None]\n"
        "    frequency = torch.exp(-torch.arange(0, d_model, 2, dtype=dtype) / d_model * log_base)\n"
        "    angle = position * frequency\n"
        "    return torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1).reshape(length, d_model)\n", None),
    "namedtuple_result": ("Exercise 8",
        "# Exercise 8: mine\nimport collections\nTrace = collections.namedtuple('Trace', 'tokens reason')\n"
        "def greedy_trace(prepared_logits, eos_id, max_new_tokens):\n"
        "    eos_id = require_int('eos_id', eos_id, minimum=0)\n"
        "    max_new_tokens = require_int('max_new_tokens', max_new_tokens, minimum=1)\n"
        "    steps = [list(scores) for scores in prepared_logits]\n"
        "    for scores in steps:\n"
        "        if eos_id >= len(scores):\n"
        "            raise ValueError(f'eos_id={eos_id} is not a token id of a {len(scores)}-entry score vector')\n"
        "    tokens = []\n"
        "    for scores in steps:\n"
        "        probabilities = token_distribution(scores)\n"
        "        tokens.append(max(range(len(probabilities)), key=probabilities.__getitem__))\n"
        "        if tokens[-1] == eos_id:\n"
        "            return Trace(tokens, 'eos')\n"
        "        if len(tokens) == max_new_tokens:\n"
        "            return Trace(tokens, 'length_limit')\n"
        "    raise ValueError('the prepared steps ran out before EOS or the limit')\n", None),
}


def other_honest(book, name: str) -> nbformat.NotebookNode:
    """The solved student edition with another exercise written in the honest way ``name``."""
    label, source, own = OTHER_HONEST[name]
    nb = _solved(book)
    if source is None:  # the solved cell as it is, after a cell of the student's own that writes the private helper again
        source = nb.cells[_exercise_index(nb, label)].source
        helpers = next(c.source for c in nb.cells if "def _require_hidden(" in c.source)
        start = helpers.index("def _require_hidden(")
        own = helpers[start:helpers.index("\n\n\ndef ", start)] + "\n"
    return replaced(nb, source, own, label)


# Shortcuts that skip the technique an exercise teaches, and pass only where the measurement is not the student's.
DENSE = {  # Module 5.1, Exercise 6: never hold a T_q x T_k score matrix
    "dense_scores": "def tiled_attention_plain(Q, K, V, *, tile_size=128):\n"
                    "    s = Q @ K.T / math.sqrt(Q.shape[1])\n"
                    "    e = np.exp(s - s.max(axis=1, keepdims=True))\n"
                    "    return (e / e.sum(axis=1, keepdims=True)) @ V\n",
    "dense_sdpa": "def tiled_attention_plain(Q, K, V, *, tile_size=128):\n"
                  "    return np.asarray(sdpa(Q, K, V))\n",
}


def dense(book, name: str) -> nbformat.NotebookNode:
    """The solved edition of Module 5.1 with Exercise 6 answered densely."""
    return replaced(_solved(book), "# Exercise 6: dense\n" + DENSE[name], label="Exercise 6")


# Contract mining: rebuild every function nested in a contract (its reference, its expected values) from code
# objects, in the student's namespace or in builder/contracts/ on disk, and answer with the first that runs.
MINER = """import pathlib as _pathlib, sys as _sys, types as _types
def _mined_functions():
    space, found = globals(), []
    def walk(code, origin):
        for const in code.co_consts:
            if isinstance(const, _types.CodeType) and not const.co_name.startswith("<"):  # no genexpr, lambda
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
    from builder import pairing, student

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
