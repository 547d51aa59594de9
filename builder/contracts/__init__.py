"""Contract checks and helpers, each with exactly one source here, inlined into the notebooks.

Every public name of the submodules listed in ``MODULES`` can be named by an
``inline`` region. Inlined code refers only to builtins, to modules it imports inside its own
body (standard library, numpy, torch, matplotlib) and to other inlined names.
"""

from . import (
    attention,
    calls,
    capstone,
    diagrams,
    efficient,
    environment,
    exact_attention,
    exercises,
    gqa,
    kv_cache,
    masking,
    messages,
    decoding,
    heads,
    norms,
    positions,
    frozen,
    streaming,
    style,
    validation,
    violations,
    waiting,
)

# Order matters only for error messages; each module lists its inlinable names in __all__.
MODULES = (
    messages,
    environment,
    validation,
    violations,
    frozen,
    style,
    diagrams,
    positions,
    attention,
    heads,
    norms,
    decoding,
    exercises,
    calls,
    masking,
    gqa,
    streaming,
    kv_cache,
    efficient,
    exact_attention,
    capstone,
    waiting,
)


def registry() -> dict[str, tuple[object, str]]:
    """Every inlinable name, mapped to (its object, the module that defines it)."""
    found: dict[str, tuple[object, str]] = {}
    for module in MODULES:
        for name in module.__all__:
            if name in found:
                raise RuntimeError(f"{name} is defined in both {found[name][1]} and {module.__name__}; keep one source")
            found[name] = (getattr(module, name), module.__name__)
    return found
