"""The student's side of the channel: define the submission's code, then answer the judge's calls with data.

This runs in the student's own process (forked by ``sandbox``), over the course's namespace up to
the exercise, where earlier exercises run on their reference solutions. It never sees the judge,
the check, the expected values or the reference of the exercise being judged.
"""

import ast
import functools
import re
import traceback

from . import wire

_MAGIC = re.compile(r"^\s*[%!]")  # IPython magics and shell lines: %%time, %matplotlib inline, !pip ...
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign)
_TAKEN = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, *_ASSIGNMENTS)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def python_only(source: str) -> str:
    """The cell with magic and shell lines blanked (line numbers kept)."""
    return "\n".join("" if _MAGIC.match(line) else line for line in source.splitlines())


def taken(tree: ast.Module) -> list[ast.stmt]:
    """What a cell contributes, in order: imports, function and class definitions, and every assignment."""
    return [n for n in tree.body if isinstance(n, _TAKEN)]


def skipped(tree: ast.Module, where: str) -> list[str]:
    """A note naming the lines of a cell that do not run (loops, calls, plots: statements that define nothing)."""
    lines = [str(n.lineno) for n in tree.body if not isinstance(n, _TAKEN)
             and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]  # a docstring is no statement
    if not lines:
        return []
    return [f"Note: line{'s' if len(lines) > 1 else ''} {', '.join(lines)} of {where} did not run: the grader runs only "
            "imports, definitions and assignments."]


def bound(statements: list[ast.stmt]) -> set[str]:
    """The names a cell's statements bind: functions, classes, imports and assignment targets."""
    names: set[str] = set()
    for node in statements:
        if isinstance(node, _DEFINITIONS):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, _ASSIGNMENTS):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
    return names


def required(names) -> list[str]:
    """The names a student must write: the exercise's public ones (a private helper of the reference is optional)."""
    public = [n for n in names if not n.startswith("_")]
    return public or list(names)


def static_problem(label: str, names, source: str | None) -> str | None:
    """Why a cell cannot be judged, read without running it (in the judge): no cell, no Python, or a required name missing."""
    shown = ", ".join(f"`{n}`" for n in required(names))
    if source is None:
        return f"MISSING: the submission has no {label} cell, so {shown} was not graded."
    try:
        tree = ast.parse(python_only(source), filename=f"<your {label} cell>")
    except SyntaxError as exc:
        return f"ERROR: your {label} cell does not compile: SyntaxError at line {exc.lineno}: {exc.msg}"
    missing = [n for n in required(names) if n not in bound(taken(tree))]
    if missing:
        return f"MISSING: your {label} cell does not define {', '.join(f'`{n}`' for n in missing)}."
    return None


def written(names, source: str | None) -> list[str]:
    """The exercise's names that the student's cell binds (the judge stands in for these only)."""
    try:
        found = bound(taken(ast.parse(python_only(source or ""))))
    except SyntaxError:
        return []
    return [n for n in names if n in found]


def where_in_cell(exc: BaseException, filenames: set[str]) -> str:
    """'\\n  at line L of your Exercise N cell, in f' for the innermost frame in the student's code, or ''."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in filenames]
    return f"\n  at line {frames[-1].lineno} of {frames[-1].filename[1:-1]}, in {frames[-1].name}" if frames else ""


def _run(statements: list[ast.stmt], filename: str, namespace: dict) -> None:
    """Execute the chosen statements of one cell in ``namespace``."""
    exec(compile(ast.Module(body=statements, type_ignores=[]), filename, "exec"), namespace)


def _run_each(statements: list[ast.stmt], filename: str, where: str, namespace: dict, notes: list[str]) -> None:
    """Run statements in order; an assignment that raises is named in a note and the rest still run."""
    for node in statements:
        try:
            _run([node], filename, namespace)
        except Exception as exc:
            if not isinstance(node, _ASSIGNMENTS) and filename.startswith("<your Exercise"):
                raise
            notes.append(f"Note: line {node.lineno} of {where} raised {type(exc).__name__} and was skipped.")


def define(course: dict, label: str, names: list[str], own: list[str], source: str | None) -> tuple[dict | None, str | None, list[str]]:
    """(the student's namespace, a failure or None, notes): the student's own cells, then the exercise cell.

    The student's names live in a copy of the course namespace: a helper called like a course
    variable is the student's in the student's code and leaves the course's code alone.
    """
    problem = static_problem(label, names, source)
    if problem or source is None:  # no cell (source None) is always a problem
        return None, problem, []
    mine = dict(course)
    notes, filenames = [], {f"<your {label} cell>"}
    for number, cell in enumerate(own, start=1):
        filename = f"<your own cell {number}>"
        filenames.add(filename)
        try:
            tree = ast.parse(python_only(cell), filename=filename)
        except SyntaxError:
            continue  # a scratch cell that is not Python: nothing to take
        notes += skipped(tree, f"your own cell {number}")
        _run_each(taken(tree), filename, f"your own cell {number}", mine, notes)
    filename = f"<your {label} cell>"
    tree = ast.parse(python_only(source), filename=filename)
    notes += skipped(tree, f"your {label} cell")
    try:
        _run_each(taken(tree), filename, f"your {label} cell", mine, notes)
    except Exception as exc:  # a decorator, default argument or import that fails while defining
        return None, f"ERROR: defining your {label} code raised {type(exc).__name__}: {exc}{where_in_cell(exc, filenames)}", notes
    shadows = sorted(n for n in mine if n in course and mine[n] is not course[n] and n not in names and not n.startswith("_"))
    if shadows:
        notes.append("Note: your " + ", ".join(f"`{n}`" for n in shadows) + " shares a name with the course's; your code "
                     "used yours, and the course's own code kept the course's.")
    return mine, None, notes


class Server:
    """Answers one judge: define, call (functions, classes, methods of returned modules), and gradients."""

    def __init__(self, sock, course: dict):
        self.sock, self.course = sock, course
        self.mine: dict | None = None  # the student's namespace, once defined
        self.handles: dict[int, object] = {}
        self.graphs: dict[int, tuple[list, list]] = {}
        self.filenames: set[str] = set()

    def serve(self) -> None:
        """Answer requests until the judge closes the channel."""
        while True:
            try:
                header, blobs = wire.receive(self.sock)
            except (EOFError, OSError):
                return
            self.respond(header, blobs)

    def respond(self, header: dict, blobs: list) -> None:
        """Answer one request of the judge, the student's exception or a refusal as data."""
        try:
            reply, out = self.answer(header, blobs)
        except wire.Refused as exc:
            reply, out = {"refused": str(exc)}, []
        except BaseException as exc:  # the student's code raised: report it as data
            reply, out = {"raised": _raised(exc, self.filenames)}, []
        try:
            wire.send(self.sock, reply, out)
        except wire.Refused as exc:
            wire.send(self.sock, {"refused": str(exc)})

    def ask(self, header: dict, blobs: list | None = None) -> tuple[dict, list]:
        """A request to the judge from the student's code (a check's object); the judge's own requests meanwhile answered."""
        wire.send(self.sock, header, blobs)
        while True:
            reply, out = wire.receive(self.sock)
            if "op" not in reply:
                break
            self.respond(reply, out)
        if "refused" in reply:
            raise TypeError(f"the check's object refused this: {reply['refused']}")
        if "raised" in reply:
            raise RuntimeError("the check's object refused this call: its property fails (the verdict says which)")
        return reply, out

    def invoke(self, ref: int, name: str | None, *args, **kwargs):
        """Call a check's object (``name`` None) or one of its methods in the judge; the result as data."""
        blobs: list = []
        encoded = wire.encode((args, kwargs), blobs, handles=self._handle)
        reply, out = self.ask({"op": "invoke", "ref": ref, "name": name, "args": encoded}, blobs)
        return wire.decode(reply.get("value"), out, special=self._special)

    def answer(self, header: dict, blobs: list) -> tuple[dict, list]:
        """One request's reply and its blobs."""
        op = header.get("op")
        if op == "define":
            self.filenames = {f"<your {header['label']} cell>"} | {f"<your own cell {i}>" for i in range(1, len(header["own"]) + 1)}
            self.mine, failed, notes = define(self.course, header["label"], header["names"], header["own"], header["source"])
            return {"failed": failed, "notes": notes}, []
        if op == "call":
            return self.call(header, blobs)
        if op == "vjp":
            return self.vjp(header, blobs)
        raise wire.Refused(f"an unknown request {op!r}")

    def call(self, header: dict, blobs: list) -> tuple[dict, list]:
        """Call a student's name, a module handle or one of its methods, on decoded arguments."""
        leaves: list = []
        args, kwargs = wire.decode(header["args"], blobs, leaves=leaves, special=self._special)
        if "name" in header:
            if self.mine is None or header["name"] not in self.mine:
                raise wire.Refused(f"no definition of {header['name']!r}")
            target = self.mine[header["name"]]
        else:
            target = self._module(header["handle"], header["state"], blobs)
            leaves += _param_leaves(target, header.get("param_leaves") or [])
        module = None if "name" in header else target
        if header.get("method"):
            target = getattr(target, header["method"])
        value, peak = _traced(target, args, kwargs) if header.get("trace") else (target(*args, **kwargs), None)
        out: list = []
        encoded = wire.encode(value, out, handles=self._handle)
        reply = {"value": encoded}
        if peak is not None:
            reply["peak"] = peak
        if module is not None:  # what the call did to the module's parameters and buffers goes back, as in the notebook
            reply["state"] = wire.encode(_state(module), out)
        if leaves:
            call = len(self.graphs) + 1
            self.graphs[call] = (leaves, list(wire.tensors_in(value)))
            reply["call"] = call
        return reply, out

    def vjp(self, header: dict, blobs: list) -> tuple[dict, list]:
        """Gradients of one earlier call's outputs, weighted by the judge's grad_outputs, for its inputs."""
        import torch

        leaves, outputs = self.graphs[int(header["call"])]
        grads = wire.decode(header["grads"], blobs)
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
        found = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True, retain_graph=True) if pairs else [None] * len(leaves)
        out: list = []
        return {"value": wire.encode([None if g is None else g.detach().clone() for g in found], out)}, out

    def _handle(self, value, blobs: list):
        """Modules become handles with their parameters as data (torch.nn's own kinds as data); course values their
        fields; the judge's objects their reference back; else None."""
        import torch

        if isinstance(value, JudgeRef):
            return ["J", object.__getattribute__(value, "_ref")]
        if type(value).__name__ in wire.TRUSTED and type(value) is getattr(torch.nn, type(value).__name__):
            return ["TM", type(value).__name__, _module_data(value, blobs, self._handle)]
        if isinstance(value, torch.nn.Module):
            self.handles[len(self.handles) + 1] = value
            return ["M", len(self.handles), type(value).__name__, _module_data(value, blobs, self._handle)]
        return wire.encode_value(value, self.course, blobs, self._handle)

    def _special(self, tag: str, body: list, walk):
        """What the judge sends beyond data: a course value, one of this process's modules, a reference to its object."""
        if tag == "O":
            return wire.decode_value(self.course, body, walk)
        if tag == "H":
            return self._module(body[0], body[1], None, walk)
        if tag == "J":
            return JudgeRef(self, int(body[0]), str(body[1]) if len(body) > 1 else "object")
        raise wire.Refused(f"an unknown kind of value {tag!r}")

    def _module(self, handle, state, blobs, walk=None):
        """One of the modules this process handed out, with the judge's copy of its parameters and buffers put back."""
        target = self.handles.get(int(handle)) if type(handle) is int else None
        if target is None:
            raise wire.Refused(f"no module with handle {handle!r}")
        _load_state(target, walk(state) if walk else wire.decode(state, blobs))
        return target


class JudgeRef:
    """An object of the check (a cache that records, a model that counts), living in the judge: its public attributes
    are read there as data and its methods run there, so what it records is what the student's code did to it."""

    __slots__ = ("_server", "_ref", "_kind")

    def __init__(self, server: Server, ref: int, kind: str):
        for name, value in (("_server", server), ("_ref", ref), ("_kind", kind)):
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        server = object.__getattribute__(self, "_server")
        ref = object.__getattribute__(self, "_ref")
        reply, out = server.ask({"op": "attr", "ref": ref, "name": name})
        if reply.get("missing"):
            raise AttributeError(f"{object.__getattribute__(self, '_kind')!r} object has no attribute {name!r}")
        if reply.get("method"):
            return functools.partial(server.invoke, ref, name)
        return wire.decode(reply.get("value"), out, special=server._special)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"the check's {object.__getattribute__(self, '_kind')} is read-only")

    def __call__(self, *args, **kwargs):
        return object.__getattribute__(self, "_server").invoke(object.__getattribute__(self, "_ref"), None, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<the check's {object.__getattribute__(self, '_kind')}>"


def _traced(target, args, kwargs):
    """(target's result, the peak memory tracemalloc saw while it ran): the measurement happens where the code runs."""
    import tracemalloc

    tracemalloc.start()
    try:
        value = target(*args, **kwargs)
        return value, int(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def _state(module) -> dict:
    """A module's parameters and plain buffers after a call, as the judge's mirror loads them back."""
    import torch

    return {"params": {name: p.detach() for name, p in module.named_parameters()},
            "buffers": {name: b for name, b in module.named_buffers() if type(b) is torch.Tensor}}


def _module_data(module, blobs: list, handle) -> dict:
    """A module's own parameters, buffers, data attributes and public methods, and its children (``handle`` encodes each)."""
    import torch

    params = [[name, None if p is None else wire.encode(p.detach(), blobs), bool(p is not None and p.requires_grad)]
              for name, p in module._parameters.items()]
    buffers = [[name, wire.encode(b, blobs)] for name, b in module._buffers.items() if type(b) is torch.Tensor]
    children = [[name, handle(child, blobs)] for name, child in module._modules.items() if child is not None]
    base = set(dir(torch.nn.Module))
    methods = sorted(n for n in dir(type(module)) if not n.startswith("_") and n not in base and callable(getattr(type(module), n, None)))
    return {"params": params, "buffers": buffers, "attrs": _attributes(module, blobs, handle), "methods": methods,
            "children": children, "training": module.training}


def _attributes(module, blobs: list, handle) -> dict:
    """A module's public data attributes that cross as data (numbers, strings, tuples of them, a course dataclass)."""
    found = {}
    for key, value in vars(module).items():
        plain = type(value) in (int, float, bool, str, tuple, type(None)) or wire.value_fields(type(value)) is not None
        if key.startswith("_") or key == "training" or not plain:
            continue
        try:
            found[key] = wire.encode(value, blobs, handles=handle)
        except wire.Refused:
            continue  # an attribute that is not data stays in the student's process
    return found


def _param_leaves(module, names: list) -> list:
    """The module's parameters the judge differentiates by, in the judge's order (their gradients go back)."""
    found = dict(module.named_parameters())
    if type(names) is not list or not all(type(n) is str and n in found for n in names):
        raise wire.Refused("parameters the module does not have")
    return [found[n] for n in names]


def _load_state(module, state: dict) -> None:
    """Put the judge's copy of the parameters and buffers (values, dtypes) back into the student's module."""
    params = dict(module.named_parameters())
    for name, tensor in state.get("params", {}).items():
        params[name].data = tensor
    for name, tensor in state.get("buffers", {}).items():
        owner, _, leaf = name.rpartition(".")
        (module.get_submodule(owner) if owner else module)._buffers[leaf] = tensor
    module.train(bool(state.get("training", module.training)))


def _raised(exc: BaseException, filenames: set[str]) -> dict:
    """An exception from the student's code as data: its type, nearest built-in base, message and line."""
    base = next((k.__name__ for k in type(exc).__mro__ if k.__module__ == "builtins"), "Exception")
    try:
        message = str(exc)
    except Exception:  # a __str__ that raises
        message = "(its message could not be read)"
    return {"type": type(exc).__name__, "base": base, "message": message[:4000], "where": where_in_cell(exc, filenames)}
