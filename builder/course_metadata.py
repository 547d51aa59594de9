"""``metadata.course = {module, edition, language}`` in every built .ipynb, so the grader knows a notebook in any language."""


def stamp(module: str, edition: str, language: str) -> dict[str, str]:
    """The ``metadata.course`` of one built .ipynb: its course module, edition (solution, student, or graded: ``release``'s) and language."""
    return {"module": module, "edition": edition, "language": language}
