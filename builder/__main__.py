"""``python -m builder``: the course builder's command line."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while the libraries load: one line, as any later interrupt
    print("interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
