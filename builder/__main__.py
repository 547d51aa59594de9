"""``python -m builder``: the course builder's command line."""

import sys

try:  # Ctrl-C while the libraries load: one line and 130, as any later interrupt
    from .cli import main
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
