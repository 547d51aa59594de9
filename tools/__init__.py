"""The course's development tools: benchmarks and mutation testing (``python -m tools``); not part of the shipped package."""
