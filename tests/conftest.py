"""Shared fixtures: the package index on loopback that environments are built from, the built assignment
(built once if `make assignment` has not run), a second assignment's versions, and one local LMS per test module
for the tool's tests and the browser tests."""

import subprocess
import sys

import pytest

from testbed.lms import start_lms
from testbed.submissions import AUTOGRADER_ZIP, ROOT, SOLUTION_NOTEBOOK, STUDENT_NOTEBOOK, load_test_sources
from tests.lti_service import gradebook
from tests.package_index import downloaded_wheels, serve_index

LONGEST_FIRST = (  # the files that take longest, longest first (seconds each in a `make test`, December 2026)
    "tests/parity/test_parity.py",  # 548: stock `otter run` on every notebook of the parity corpus
    "tests/e2e/test_lite_browser.py",  # 279: Pyodide starting in Chromium, seven times
    "tests/lti_service/test_reliability.py",  # 230
    "tests/lti_service/test_assignment_cli.py",  # 176
    "tests/lti_service/test_scale_out.py",  # 170
    "tests/lti_service/test_assignments.py",  # 165
    "tests/autograder/test_large_values.py",  # 161
    "tests/autograder/test_attacks.py",  # 137
    "tests/e2e/test_assignments_browser.py",  # 136
    "tests/autograder/test_course_attacks.py",  # 102
    "tests/e2e/test_teacher_states_browser.py",  # 98
    "tests/e2e/test_browser.py",  # 87
    "tests/autograder/test_cli.py",  # 84
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, each file's tests in their own order: pytest-xdist (`make test`) hands a file
    at a time to whichever process is free, and a long file handed out last would leave the run waiting for
    it alone."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(scope="session", autouse=True)
def package_index(tmp_path_factory):
    """No test reaches PyPI: every environment built in the session (here or in a process a test starts) comes
    from build/test-wheels/ (`make test` downloads them), served on loopback. A test may set its own index."""
    try:
        wheels = downloaded_wheels()
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GRADER_PIP_EXTRA_INDEX_URL", raising=False)  # no index of the machine's either
        for url in serve_index(tmp_path_factory.mktemp("package-index"), wheels):
            patch.setenv("GRADER_PIP_INDEX_URL", url)  # in os.environ: processes the tests start inherit it
            yield url


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
