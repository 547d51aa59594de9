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
