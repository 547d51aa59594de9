"""The course builder: inline contracts, embed references, pair, check, execute and export notebooks."""

__version__ = "0.1.0"
