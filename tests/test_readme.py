"""The README's module tables follow the course config: every edition of every notebook has its Colab badge."""

import re

from builder.config import load_course
from tests.support import ROOT

LINK = re.compile(r"https://colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/(notebooks/[\w/.-]+\.ipynb)")


def test_every_notebook_edition_has_a_colab_badge_and_every_badge_a_notebook():
    course = load_course(ROOT)
    linked = set(LINK.findall((ROOT / "README.md").read_text(encoding="utf-8")))
    editions = course.notebooks + tuple(course.translations)
    expected = {str(path.relative_to(ROOT)) for nb in editions for path in (nb.ipynb, nb.student_ipynb)}
    assert expected - linked == set(), f"README lacks a Colab badge for {sorted(expected - linked)}"
    assert linked - expected == set(), f"README links notebooks the course config does not list: {sorted(linked - expected)}"
