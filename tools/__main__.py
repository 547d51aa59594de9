"""``python -m tools``: the course's development tools."""

import sys

from .cli import main

sys.exit(main())
