"""Shared fixtures: the built assignment (built once if `make assignment` has not run)."""

import subprocess
import sys

import pytest

from tests.submissions import AUTOGRADER_ZIP, ROOT, SOLUTION_NOTEBOOK, STUDENT_NOTEBOOK, load_test_sources


@pytest.fixture(scope="session")
def built_assignment():
    """Paths of the build outputs; builds them when missing so `pytest` alone works too."""
    if not all(p.exists() for p in (AUTOGRADER_ZIP, STUDENT_NOTEBOOK, SOLUTION_NOTEBOOK)):
        subprocess.run([sys.executable, str(ROOT / "assignment" / "build.py")], check=True)
    return {"zip": AUTOGRADER_ZIP, "student": STUDENT_NOTEBOOK, "solution": SOLUTION_NOTEBOOK}


@pytest.fixture(scope="session")
def test_sources(built_assignment):
    return load_test_sources(built_assignment["zip"])
