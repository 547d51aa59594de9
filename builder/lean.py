"""Imports that ``python -m builder`` never needs, kept out of it: jsonschema's optional format checkers.

jsonschema imports every format checker that is installed (jupyterlab's extra brings them), and rfc3987_syntax
alone compiles Lark grammars for about 2 s at import. No schema the builder validates uses a format.
"""

import sys

FORMAT_CHECKER_MODULES = ("rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "fqdn", "idna",
                          "isoduration", "uri_template", "webcolors", "jsonpointer")
# idna also spells host names for requests, httpx and anyio (which jupyter_server uses): the builder keeps it.
SKIPPED_BY_BUILDER = tuple(name for name in FORMAT_CHECKER_MODULES if name != "idna")


def skip_format_checkers(names: tuple[str, ...] = SKIPPED_BY_BUILDER) -> None:
    """Make each of ``names`` not imported yet fail to import (a None entry in sys.modules), which jsonschema skips quietly."""
    for name in names:
        sys.modules.setdefault(name, None)
