"""Shared fixtures: the built assignment (built once if `make assignment` has not run), a second assignment's
versions, and one local LMS per test module for the tool's tests and the browser tests."""

import subprocess
import sys

import pytest

from tests.lti_service import gradebook
from tests.lti_service.conftest import start_lms
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


@pytest.fixture(scope="session")
def versions(tmp_path_factory) -> gradebook.Versions:
    """The second assignment's two versions and its students' notebooks, built once (each build is an `otter
    assign`); the tests that add it to the tool read them and never change them."""
    return gradebook.versions(tmp_path_factory.mktemp("gradebook"))


@pytest.fixture(scope="module")
def lms(request, tmp_path_factory, built_assignment):
    """One LMS (platform and tool) per test module; the module's TOOL_ENV adds settings of the tool."""
    lms = start_lms(tmp_path_factory.mktemp("lms"), **getattr(request.module, "TOOL_ENV", {}))
    yield lms
    lms.tool.stop()
    lms.platform.stop()
