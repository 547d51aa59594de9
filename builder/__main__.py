"""``python -m builder``: the course builder's command line."""

import sys

from .cli import main

sys.exit(main())
