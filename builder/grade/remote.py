"""The judge's side of the channel: stand-ins for the student's functions and classes that call across it.

A stand-in sends its arguments as data and rebuilds the reply as data. A returned ``nn.Module``
becomes a ``Mirror``: an ``nn.Module`` on the judge's side whose parameters are copies, sent back
before each call, so the contract can read, cast (``.double()``) and set them. When an argument
requires grad, the call is one ``torch.autograd.Function`` whose backward asks the student's
process for the vector-Jacobian product, so gradient properties are judged too.
"""

import functools

from . import wire


class StudentError(Exception):
    """An exception raised by the student's code whose type is not built in; the message names it."""


class Channel:
    """Requests to one student's process."""

    def __init__(self, sock, namespace: dict):
        self.sock, self.namespace = sock, namespace
        self.state: dict | None = None  # a module call's parameters and buffers afterwards, for its mirror
        self.refs: dict[int, object] = {}  # the check's objects the student's code holds a reference to, by number
        self.failed: BaseException | None = None  # what one of them raised while the student's code used it

    def request(self, header: dict, blobs: list | None = None) -> tuple[dict, list]:
        """Send one request; the reply, or the student's exception raised here as data. Meanwhile the student's code may
        use the check's objects it was given (a cache that records its appends): those requests are answered here."""
        wire.send(self.sock, header, blobs)
        while True:
            try:
                reply, out = wire.receive(self.sock)
            except EOFError:
                raise ConnectionError("the process running your code stopped before it answered "
                                      "(it exited, was killed, or ran out of memory or CPU time)") from None
            if "op" not in reply:
                break
            self._answer(reply, out)
        if self.failed is not None:  # the check's own object found the fault: its verdict stands, whatever came after
            failed, self.failed = self.failed, None
            raise failed
        if "raised" in reply:
            raise _as_exception(reply["raised"])
        if "refused" in reply:
            raise TypeError(f"your code gave the judge {reply['refused']}; only {wire.ALLOWED} cross to the judge")
        return reply, out

    def define(self, label: str, names: tuple[str, ...], own: list[str], source: str | None) -> dict:
        """Define the student's cells in their process; {failed, notes}."""
        reply, _ = self.request({"op": "define", "label": label, "names": list(names), "own": own, "source": source})
        return reply

    def call(self, target: dict, args: tuple, kwargs: dict, blobs: list | None = None, params: list | None = None):
        """Call ``target`` ({name} or {handle, state, method}; ``blobs`` holds the state's) with data.

        Autograd flows through, to the arguments that require grad and to ``params``, a module's
        (name, parameter) pairs that do.
        """
        import torch

        import tracemalloc

        blobs = list(blobs or [])
        tracing = tracemalloc.is_tracing()  # a contract measuring memory: measure it in the student's process instead
        before = tracemalloc.get_traced_memory()[1] if tracing else 0  # the contract's own peak so far in its window
        encoded = wire.encode((tuple(args), dict(kwargs)), blobs, handles=self._outgoing)
        grad = torch.is_grad_enabled()
        params = [(n, p) for n, p in params or [] if p.requires_grad] if grad else []
        header = dict(target, op="call", args=encoded, trace=tracing, param_leaves=[n for n, _ in params])
        leaves = [t for t in wire.tensors_in((args, kwargs)) if t.requires_grad] + [p for _, p in params]
        if leaves and grad:
            box: list = []
            outputs = _remote_call().apply(self, header, blobs, box, *leaves)
            reply, out = box
            value = self._decode(reply["value"], out, tensors=iter(outputs))
        else:
            reply, out = self.request(header, blobs)
            value = self._decode(reply["value"], out)
        self.state = wire.decode(reply["state"], out) if "state" in reply else None
        del blobs, out
        if tracing:
            _replay_peak(reply.get("peak"), value, before)
        return value

    def _decode(self, value, blobs: list, **options):
        """A reply's value, with modules mirrored and course values rebuilt on this side."""
        return wire.decode(value, blobs, special=self._special, **options)

    def _special(self, tag: str, body: list, walk):
        """What the judge builds itself: a Mirror, torch.nn's own module, a course value, its own object."""
        if tag == "M":
            handle, name, data = int(body[0]), str(body[1]), body[2]
            return mirror(self, handle, name, data, walk)
        if tag == "TM":
            return trusted_module(self, str(body[0]), body[1], walk)
        if tag == "J":
            return self._given(body[0])
        if tag == "O":
            return wire.decode_value(self.namespace, body, walk)
        raise wire.Refused(f"an unknown kind of value {tag!r}")

    def _given(self, number):
        """The check's object that the student's code names by ``number``; refused unless the judge gave it."""
        if type(number) is not int or number not in self.refs:
            raise wire.Refused("a reference to an object the check never gave")
        return self.refs[number]

    def _outgoing(self, value, blobs: list):
        """What the judge sends beyond data: a student's module back by its handle, a course value by its
        fields, any other object of the check by reference (its methods then run here, where it records)."""
        import torch

        handle = getattr(value, "_course_handle", None) if isinstance(value, torch.nn.Module) else None
        if type(handle) is int:
            return ["H", handle, value._state(blobs)]
        encoded = wire.encode_value(value, self.namespace, blobs, self._outgoing)
        if encoded is not None or not _referable(value):
            return encoded
        number = next((n for n, obj in self.refs.items() if obj is value), len(self.refs) + 1)
        self.refs[number] = value
        return ["J", number, type(value).__name__]

    def _answer(self, header: dict, blobs: list) -> None:
        """Answer the student's code's use of a check's object; what the object raised is kept for the verdict."""
        try:
            reply, out = self._use(header, blobs)
        except wire.Refused as exc:
            reply, out = {"refused": str(exc)}, []
        except Exception as exc:  # the check's object found a fault (a ContractViolation), or could not do it
            self.failed = self.failed or exc
            reply, out = {"raised": True}, []
        wire.send(self.sock, reply, out)

    def _use(self, header: dict, blobs: list) -> tuple[dict, list]:
        """One attribute read or method call on a check's object: public names of its class only, values as data."""
        import inspect

        import torch

        op, name = header.get("op"), header.get("name")
        obj = self._given(header.get("ref"))
        if name is not None and (type(name) is not str or not name.isidentifier() or name.startswith("_")):
            raise wire.Refused(f"the attribute {str(name)[:40]!r}: only public names are read")
        if op == "attr" and name is not None:
            try:
                inspect.getattr_static(obj, name)
            except AttributeError:
                return {"missing": True}, []
            if inspect.isfunction(inspect.getattr_static(type(obj), name, None)):  # its class's method: run here
                return {"method": True}, []
            value = getattr(obj, name)
            if callable(value):
                raise wire.Refused(f"the check's {name!r}: an object's functions are not handed out, only its methods")
        elif op == "invoke":
            if name is None and not isinstance(obj, torch.nn.Module):  # only a model of the check is called
                raise wire.Refused(f"a call of the check's {type(obj).__name__}, which is not a model")
            if name is not None and not inspect.isfunction(inspect.getattr_static(type(obj), name, None)):
                raise wire.Refused(f"the check's {name!r}, which is not a method of its class")
            args, kwargs = wire.decode(header.get("args"), blobs, special=self._special)
            value = (obj if name is None else getattr(obj, name))(*args, **kwargs)
        else:
            raise wire.Refused(f"an unknown request {str(op)[:40]!r}")
        out: list = []
        return {"value": wire.encode(value, out, handles=self._outgoing)}, out


def _referable(value) -> bool:
    """Whether a value is one of the check's own objects (an instance of a class it defined), passed by reference."""
    import builtins
    import types

    import numpy
    import torch

    kind = type(value)
    never = (torch.Tensor, numpy.ndarray, type, types.ModuleType, types.FunctionType, types.MethodType,
             types.BuiltinFunctionType, types.CodeType, types.FrameType, types.GeneratorType, functools.partial)
    if isinstance(value, never):  # a tensor subclass or a function: refused, as before
        return False
    root = (kind.__module__ or "").split(".")[0]
    return root not in ("torch", "numpy", "builder", "collections", "functools", "types", "typing") and \
        getattr(builtins, kind.__qualname__, None) is not kind


REPLAY_LIMIT = 64 << 20  # bytes: a student's peak replayed in the judge is capped here (any memory property fails far below)


def _replay_peak(peak, value, before: int) -> None:
    """Make the judge's tracemalloc peak the student's: forget the judge's own encoding and decoding, then allocate what
    the student's call held at its peak (less the result, which the judge holds already) and free it at once; a peak the
    contract reached itself before the call (``before``) is kept."""
    import tracemalloc

    if type(peak) is not int or peak < 0:
        return
    tracemalloc.reset_peak()
    current = tracemalloc.get_traced_memory()[0]
    filler = bytearray(min(max(0, peak - _nbytes(value), before - current), REPLAY_LIMIT))
    del filler


def _nbytes(value) -> int:
    """Bytes of the arrays and tensors in a decoded value."""
    if type(value) in (list, tuple) or isinstance(value, tuple):
        return sum(map(_nbytes, value))
    if type(value) is dict:
        return sum(map(_nbytes, value.values()))
    size = getattr(value, "nbytes", None)
    return size if type(size) is int else 0


def _as_exception(raised: dict) -> BaseException:
    """The student's exception on this side: the built-in type it derives from, with its message and line."""
    import builtins

    base = getattr(builtins, str(raised.get("base")), None)
    name, message = str(raised.get("type")), str(raised.get("message"))
    if isinstance(base, type) and issubclass(base, Exception) and base.__name__ == name:
        exc = base(message)
    elif isinstance(base, type) and issubclass(base, Exception) and base is not Exception:
        exc = base(f"{name}: {message}")
    else:
        exc = StudentError(f"{name}: {message}")
    # judge.py reads it back with getattr; an exception of any class takes it, though its type declares no such field
    exc.student_where = str(raised.get("where") or "")  # type: ignore[attr-defined]
    return exc


@functools.cache
def _remote_call():
    """The autograd Function class, built once torch is imported."""
    import torch

    class RemoteCall(torch.autograd.Function):
        """One call in the student's process; backward asks that process for the gradients."""

        @staticmethod
        def forward(ctx, channel, header, blobs, box, *leaves):
            reply, out = channel.request(header, blobs)
            flags: list = []
            tensors = _collect(channel, reply["value"], out, flags)
            box += [reply, out]
            ctx.channel, ctx.call, ctx.leaves = channel, reply.get("call"), len(leaves)
            ctx.mark_non_differentiable(*[t for t, grad in zip(tensors, flags) if not grad])
            return tuple(tensors)

        @staticmethod
        def backward(ctx, *grads):
            if ctx.call is None:
                return (None,) * (4 + ctx.leaves)
            blobs: list = []
            reply, out = ctx.channel.request({"op": "vjp", "call": ctx.call, "grads": wire.encode(list(grads), blobs)}, blobs)
            found = wire.decode(reply["value"], out)
            return (None, None, None, None, *found)

    return RemoteCall


def _collect(channel: Channel, value, blobs: list, flags: list) -> list:
    """The tensors of a reply, in the order they were sent, each with its requires_grad appended to ``flags``."""
    made: list = []
    channel._decode(value, blobs, flags=flags, made=made)
    return made


def proxy(channel: Channel, name: str):
    """The judge's stand-in for the student's function or class ``name``."""

    def stand_in(*args, **kwargs):
        return channel.call({"name": name}, args, kwargs)

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = f"The student's {name}, run in the student's own process."
    return stand_in


def mirror(channel: Channel, handle: int, name: str, data: dict, walk):
    """An nn.Module on the judge's side holding copies of a student's module's parameters."""
    import torch

    class Mirror(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return self._remote(None, args, kwargs)

        def _remote(self, method, args, kwargs):
            blobs: list = []
            state = self._state(blobs)
            value = channel.call({"handle": handle, "method": method, "state": state}, args, kwargs, blobs,
                                 params=list(self.named_parameters()))
            self._load(channel.state or {})
            return value

        def _state(self, blobs: list):
            """The parameters (values, dtypes), buffers and mode as the judge holds them, for the student's module."""
            params = {k: v.detach() for k, v in self.named_parameters()}
            buffers = {k: v for k, v in self.named_buffers()}
            return wire.encode({"params": params, "buffers": buffers, "training": self.training}, blobs)

        def _load(self, state: dict) -> None:
            """The student's module as the call left it: a weight changed in place stays changed, as in the notebook."""
            found = dict(self.named_parameters())
            with torch.no_grad():
                for name, tensor in dict(state.get("params", {})).items():
                    if name in found and type(tensor) is torch.Tensor:
                        if found[name].shape == tensor.shape and found[name].dtype == tensor.dtype:
                            found[name].copy_(tensor)
                        else:
                            found[name].data = tensor
                for name, tensor in dict(state.get("buffers", {})).items():
                    owner, leaf = _owner(self, str(name))
                    if leaf in owner._buffers and type(tensor) is torch.Tensor:
                        owner._buffers[leaf] = tensor

        def __getattr__(self, attr):
            try:
                return super().__getattr__(attr)
            except AttributeError:
                if attr in methods:
                    return lambda *a, **k: self._remote(attr, a, k)
                raise

    Mirror.__name__ = Mirror.__qualname__ = name
    methods = set(map(str, data.get("methods", [])))
    module = Mirror()
    object.__setattr__(module, "_course_handle", handle)
    return _fill(module, data, walk)


def trusted_module(channel: Channel, name: str, data: dict, walk):
    """One of torch.nn's own modules (an nn.Linear of the student's model) rebuilt here from its data: it is torch's
    code, so the judge runs it itself; its children that are the student's own are mirrors."""
    import torch

    kind = getattr(torch.nn, name, None) if name in wire.TRUSTED else None
    if not isinstance(kind, type):
        raise wire.Refused(f"a module of kind {name[:40]!r}, which is not one of torch.nn's {wire.TRUSTED}")
    # kind is a torch.nn class, whose __new__ is the one it inherits from object; mypy reads it as type.__new__
    module = kind.__new__(kind)  # type: ignore[call-overload]
    torch.nn.Module.__init__(module)
    return _fill(module, data, walk)


def _fill(module, data: dict, walk):
    """A module's own parameters, buffers, data attributes and children from their data; the module."""
    import torch

    for leaf, tensor, grad in data.get("params", []):
        parameter = None if tensor is None else torch.nn.Parameter(walk(tensor), requires_grad=bool(grad))
        module.register_parameter(str(leaf), parameter)
    for leaf, tensor in data.get("buffers", []):
        module.register_buffer(str(leaf), walk(tensor))
    for key, value in data.get("attrs", {}).items():
        key = str(key)
        if key.isidentifier() and not key.startswith("_") and not hasattr(module, key):
            object.__setattr__(module, key, walk(value))
    for leaf, child in data.get("children", []):
        child = walk(child)
        if not isinstance(child, torch.nn.Module):
            raise wire.Refused(f"a child {str(leaf)[:40]!r} that is not a module")
        module.add_module(str(leaf), child)
    module.train(bool(data.get("training", True)))
    return module


def _owner(module, qualified: str):
    """The submodule that owns ``a.b.weight`` (made on the way as empty modules) and the leaf name."""
    import torch

    *path, leaf = qualified.split(".")
    for part in path:
        child = module._modules.get(part)
        if child is None:
            child = torch.nn.Module()
            module.add_module(part, child)
        module = child
    return module, leaf
