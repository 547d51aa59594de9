"""Shared fixtures: the course configuration and throwaway copies of the repository."""

import pytest

from builder.config import load_course
from tests.support import ROOT, copy_repo


@pytest.fixture(scope="session")
def course():
    """The course configuration of this checkout."""
    return load_course(ROOT)


@pytest.fixture
def repo_copy(tmp_path):
    """A copy of the working tree, without git metadata, to break on purpose."""
    return copy_repo(tmp_path / "repo")


def pytest_collection_modifyitems(config, items):
    """The full wrong-answer sweep is long: it runs only when selected with ``-m wrong_answer``."""
    if "wrong_answer" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="the full wrong-answer sweep runs with -m wrong_answer")
    for item in items:
        if "wrong_answer" in item.keywords:
            item.add_marker(skip)
