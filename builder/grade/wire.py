"""The narrow channel between the judge and a student's process: plain data only, never pickle.

A message is a JSON header plus binary blobs. Values are tagged: ``None``, ``bool``, ``int`` and
``str`` travel as JSON; everything else as ``[tag, ...]``: floats (``nan``/``inf`` too), lists,
tuples, dicts, complex numbers, bytes, ``torch.Tensor`` and ``numpy.ndarray`` (dtype, shape,
strides and bytes), ``torch.dtype``, ``torch.Size``, and kinds each side builds itself from data: a
handle to a student's ``nn.Module`` (its parameters read as data; torch.nn's own children, such as an
``nn.Linear``, as themselves), an instance of a course value class such as ``AttentionResult`` or
``CapstoneConfig`` (its fields, rebuilt by its own constructor), and a reference to one of the
check's objects, which stays in the judge. Containers whose equality is the built-in
one travel as data: a namedtuple (rebuilt with its fields), an ``OrderedDict`` or ``defaultdict`` (as a
dict). Any other object, a subclass of ``Tensor``, or anything with its own ``__eq__``, is refused with
``Refused``.
"""

import collections
import functools
import json
import math
import socket
import struct

MAX_MESSAGE = 1 << 28  # bytes of one message, header and parts together: more is refused instead of read into memory
MAX_HEADER = 1 << 24  # bytes of one message's JSON header
MAX_PARTS = 4096  # binary parts (tensor and array bytes) of one message
MAX_DEPTH = 64  # nesting of a value
MAX_DECODED = 1 << 28  # bytes of the tensors and arrays one message decodes to, numel x itemsize, whatever their strides
_LENGTH = struct.Struct("!Q")
_PLAIN = (type(None), bool, int, str)


class Refused(TypeError):
    """A value that may not cross the channel; the message says what was sent and what is allowed."""


ALLOWED = "plain torch.Tensor, numpy.ndarray, numbers, strings, bytes, None, and lists, tuples or dicts of them"


def _torch():
    import torch

    return torch


def encode(value, blobs: list, *, handles=None, depth: int = 0):
    """The tagged JSON form of ``value``; tensor and array bytes are appended to ``blobs``."""
    if depth > 64:
        raise Refused("a value nested more than 64 levels deep")
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return ["f", repr(value)]
    if kind is complex:
        return ["c", repr(value.real), repr(value.imag)]
    if kind in (list, tuple):
        return ["l" if kind is list else "t", [encode(v, blobs, handles=handles, depth=depth + 1) for v in value]]
    if kind is dict:
        return ["d", [[encode(k, blobs, handles=handles, depth=depth + 1), encode(v, blobs, handles=handles, depth=depth + 1)]
                      for k, v in value.items()]]
    if kind is bytes:
        blobs.append(bytes(value))
        return ["b", len(blobs) - 1]
    if isinstance(value, tuple) and _builtin_eq(kind, tuple):  # a namedtuple: its fields by name, its equality a tuple's
        fields = getattr(kind, "_fields", None)
        items = [encode(v, blobs, handles=handles, depth=depth + 1) for v in tuple.__iter__(value)]
        if isinstance(fields, tuple) and len(fields) == len(items) and all(type(f) is str for f in fields):
            return ["nt", kind.__name__, list(fields), items]
        return ["t", items]
    if isinstance(value, list) and _builtin_eq(kind, list):
        return ["l", [encode(v, blobs, handles=handles, depth=depth + 1) for v in list.__iter__(value)]]
    if isinstance(value, dict) and (_builtin_eq(kind, dict) or _builtin_eq(kind, collections.OrderedDict)):  # OrderedDict, defaultdict
        return ["d", [[encode(k, blobs, handles=handles, depth=depth + 1), encode(v, blobs, handles=handles, depth=depth + 1)]
                      for k, v in dict.items(value)]]
    torch = _torch()
    if kind is torch.Tensor:
        return _encode_tensor(value, blobs)
    if kind is torch.dtype:
        return ["dt", str(value).removeprefix("torch.")]
    if kind is torch.Size:
        return ["S", list(value)]
    if kind is torch.device:
        return ["dev", str(value)]
    import numpy

    if kind is numpy.ndarray:
        if value.dtype.hasobject:
            raise Refused("a numpy array of Python objects")
        blobs.append(numpy.ascontiguousarray(value).tobytes())
        return ["A", value.dtype.str, list(value.shape), len(blobs) - 1]
    if isinstance(value, (numpy.generic,)) and kind.__module__ == "numpy":
        return encode(value.item(), blobs, handles=handles, depth=depth + 1)
    if handles is not None:
        special = handles(value, blobs)
        if special is not None:
            return special
    raise Refused(_describe(value))


def _builtin_eq(kind: type, base: type) -> bool:
    """Whether a subclass of ``base`` keeps the built-in equality (a namedtuple does; a class with its own __eq__ does not)."""
    return all(getattr(kind, name) is getattr(base, name) for name in ("__eq__", "__ne__"))


def _describe(value) -> str:
    """The type of ``value`` as a reader would name it, with its base when it subclasses a tensor or array."""
    kind = type(value)
    name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ not in ("builtins", "__main__") else kind.__qualname__
    bases = [b.__name__ for b in kind.__mro__[1:] if b.__module__ in ("torch", "numpy", "builtins") and b is not object]
    return f"an object of type {name}" + (f" (a subclass of {bases[0]})" if bases else "")


def _encode_tensor(tensor, blobs: list) -> list:
    """dtype, shape, strides, requires_grad and the bytes of the storage span the tensor covers."""
    torch = _torch()
    grad, tensor = bool(tensor.requires_grad), tensor.detach()
    if tensor.device.type != "cpu" or tensor.layout != torch.strided or tensor.is_quantized:
        raise Refused(f"a tensor on {tensor.device} with layout {tensor.layout}; send a dense CPU tensor")
    shape, strides = list(tensor.shape), list(tensor.stride())
    span = 0 if tensor.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    flat = tensor.as_strided((span,), (1,), tensor.storage_offset()).contiguous()
    blobs.append(flat.view(torch.uint8).numpy().tobytes() if span else b"")
    return ["T", str(tensor.dtype).removeprefix("torch."), shape, strides, len(blobs) - 1, grad]


def _dtype(name: str):
    """The torch dtype called ``name``; anything else is refused."""
    torch = _torch()
    found = getattr(torch, name, None) if isinstance(name, str) and name.isidentifier() else None
    if type(found) is not torch.dtype:
        raise Refused(f"an unknown dtype {name!r}")
    return found


def decode(value, blobs: list, *, special=None, leaves: list | None = None, flags: list | None = None, tensors=None, made: list | None = None):
    """The value that ``encode`` tagged; ``special(tag, body)`` builds handles and course objects.

    ``leaves`` collects the tensors sent with requires_grad (made leaves that require grad here);
    ``flags`` collects every tensor's requires_grad, ``made`` every tensor built; ``tensors`` (an iterator) supplies the tensors instead.
    """

    budget = [MAX_DECODED]

    def spend(count: int, itemsize: int) -> None:
        budget[0] -= count * itemsize
        if budget[0] < 0:
            raise Refused(f"tensors or arrays of more than {MAX_DECODED} bytes in one message (numel x itemsize)")

    def walk(item, depth=0):
        if type(item) in _PLAIN:
            return item
        if type(item) is not list or not item or type(item[0]) is not str:
            raise Refused(f"a malformed message part {str(item)[:80]!r}")
        if depth > MAX_DEPTH:
            raise Refused(f"a value nested more than {MAX_DEPTH} levels deep")
        tag, body = item[0], item[1:]
        inner = functools.partial(walk, depth=depth + 1)
        if tag == "f":
            return float(body[0])
        if tag == "c":
            return complex(float(body[0]), float(body[1]))
        if tag in ("l", "t"):
            items = [inner(v) for v in body[0]]
            return items if tag == "l" else tuple(items)
        if tag == "d":
            return {inner(k): inner(v) for k, v in body[0]}
        if tag == "nt":
            return _namedtuple(str(body[0]), tuple(map(str, body[1])))(*[inner(v) for v in body[2]])
        if tag == "b":
            return bytes(blobs[body[0]])
        if tag == "T":
            grad = bool(body[4]) if len(body) > 4 else False
            if flags is not None:
                flags.append(grad)
            if tensors is not None:
                return next(tensors)
            tensor = _decode_tensor(*body[:4], blobs=blobs, spend=spend)
            if grad and leaves is not None and tensor.is_floating_point():
                tensor = tensor.detach().requires_grad_(True)
                leaves.append(tensor)
            if made is not None:
                made.append(tensor)
            return tensor
        if tag == "dt":
            return _dtype(body[0])
        if tag == "S":
            return _torch().Size([int(n) for n in body[0]])
        if tag == "dev":
            return _torch().device(str(body[0]))
        if tag == "A":
            import numpy

            dtype = numpy.dtype(str(body[0]))
            if dtype.hasobject:
                raise Refused("a numpy array of Python objects")
            spend(math.prod(int(n) for n in body[1]), dtype.itemsize)
            return numpy.frombuffer(blobs[body[2]], dtype=dtype).reshape([int(n) for n in body[1]]).copy()
        if special is not None:
            return special(tag, body, inner)
        raise Refused(f"an unknown kind of value {tag!r}")

    return walk(value)


@functools.lru_cache(maxsize=256)
def _namedtuple(name: str, fields: tuple[str, ...]):
    """A namedtuple class of these fields (its name kept when it is an identifier)."""
    try:
        return collections.namedtuple(name if name.isidentifier() else "Result", fields)
    except (ValueError, TypeError):
        raise Refused(f"a namedtuple with fields {list(fields)[:8]}") from None


def _decode_tensor(dtype, shape, strides, blob, blobs, spend=None):
    """A fresh tensor with the sender's dtype, shape and strides (a transposed view stays one)."""
    torch = _torch()
    dtype = _dtype(dtype)
    shape, strides = [int(n) for n in shape], [int(s) for s in strides]
    if any(n < 0 for n in shape) or len(shape) != len(strides) or len(shape) > MAX_DEPTH:
        raise Refused(f"a tensor of shape {shape[:8]} and strides {strides[:8]}")
    if spend is not None:  # a zero-stride view of 4 bytes still counts as every element it shows
        spend(math.prod(shape), dtype.itemsize)
    data = blobs[blob]
    if not data:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    if any(s < 0 for s in strides) or span > flat.numel():
        raise Refused(f"a tensor whose strides {strides} reach past its {flat.numel()} elements")
    return flat.as_strided(shape, strides)


TRUSTED = ("Linear", "Embedding", "ModuleList", "ModuleDict", "Sequential", "Dropout", "Identity", "SiLU", "GELU",
           "ReLU", "LayerNorm", "RMSNorm")  # torch.nn's own modules: rebuilt as themselves, run with torch's code


def value_fields(kind) -> tuple[str, ...] | None:
    """The field names of a course value class (a dataclass, or a class with a ``FIELDS`` tuple such as CapstoneConfig);
    None for any other kind."""
    import dataclasses

    if not isinstance(kind, type):
        return None
    if dataclasses.is_dataclass(kind):
        return tuple(f.name for f in dataclasses.fields(kind))
    fields = getattr(kind, "FIELDS", None)
    if isinstance(fields, tuple) and fields and all(type(f) is str and f.isidentifier() for f in fields):
        return fields
    return None


def encode_value(value, namespace: dict, blobs: list, handles) -> list | None:
    """``["O", name, fields]`` for an instance of the namespace's own value class of that name, else None."""
    kind = type(value)
    fields = value_fields(kind) if namespace.get(kind.__name__) is kind else None
    if fields is None:
        return None
    return ["O", kind.__name__, {f: encode(getattr(value, f), blobs, handles=handles) for f in fields}]


def decode_value(namespace: dict, body: list, walk):
    """The namespace's value class named in an ``"O"`` body, rebuilt by its own constructor from the fields."""
    kind = namespace.get(str(body[0]))
    if kind is None or value_fields(kind) is None:
        raise Refused(f"an object of {str(body[0])[:40]!r}, which is not one of the course's value types")
    return kind(**{str(k): walk(v) for k, v in body[1].items()})


def tensors_in(value):
    """Every exact tensor inside a value (lists, tuples, dicts, dataclass fields), in the order ``encode`` writes them."""
    import dataclasses

    torch = _torch()
    if type(value) is torch.Tensor:
        yield value
    elif type(value) in (list, tuple):
        for item in value:
            yield from tensors_in(item)
    elif type(value) is dict:
        for key, item in value.items():
            yield from tensors_in(key)
            yield from tensors_in(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from tensors_in(getattr(value, field.name))


def send(sock: socket.socket, header: dict, blobs: list | None = None) -> None:
    """One message: the JSON header and its blobs, each length-prefixed."""
    blobs = blobs or []
    text = json.dumps(dict(header, blobs=len(blobs)), ensure_ascii=True, allow_nan=False).encode()
    parts = [_LENGTH.pack(len(text)), text]
    for blob in blobs:
        parts += [_LENGTH.pack(len(blob)), blob]
    sock.sendall(b"".join(parts))


def _exactly(sock: socket.socket, count: int, limit: int = MAX_MESSAGE) -> bytes:
    """``count`` bytes from ``sock``; EOFError when the other side has gone."""
    if count > limit:
        raise Refused(f"a message of more than {limit} bytes")
    buffer = bytearray(count)
    view, got = memoryview(buffer), 0
    while got < count:
        n = sock.recv_into(view[got:])
        if not n:
            raise EOFError("the other side of the channel closed it")
        got += n
    return bytes(buffer)


def receive(sock: socket.socket) -> tuple[dict, list]:
    """One message: (header, blobs), within MAX_HEADER, MAX_PARTS and MAX_MESSAGE bytes in all."""
    text = _exactly(sock, _LENGTH.unpack(_exactly(sock, 8))[0], MAX_HEADER)
    try:
        header = json.loads(text)
    except (ValueError, RecursionError):
        raise Refused("a message header that is not JSON, or nested too deeply") from None
    if type(header) is not dict or type(header.get("blobs")) is not int or not 0 <= header["blobs"] <= MAX_PARTS:
        raise Refused(f"a malformed message header (at most {MAX_PARTS} parts)")
    left, blobs = MAX_MESSAGE - len(text), []
    for _ in range(header["blobs"]):
        blobs.append(_exactly(sock, _LENGTH.unpack(_exactly(sock, 8))[0], left))
        left -= len(blobs[-1])
    return header, blobs

