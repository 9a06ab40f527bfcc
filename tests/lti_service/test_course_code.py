"""Course code confined, through the tool (issue 18): course B's staff add an assignment whose public test
tries to show its students everything of the tool it can read (keys, SECRET_KEY, the database with course
A's submissions, every other file of the data directory, the tool's environment). It reads nothing: its
students get their score and feedback, and nothing of the tool's."""

from __future__ import annotations

import io
import json
import zipfile
from html import unescape

from testbed.lms import add_link, finished_build, staff_page, start_lms, upload_zip
from testbed.submissions import AUTOGRADER_ZIP, notebook_bytes

TITLE = "Decode for course B"
SECRET_ENV = "tool-environment-canary-93d1"

SNOOP = """

@test_case(points=None, hidden=False)
def test_course_b_shows_what_it_can_read(ms_per_token):
    import os
    found = [path for path in {paths!r} if os.access(path, os.R_OK)]
    found += [name for name, value in os.environ.items() if {canary!r} in value]
    for path in found[:3]:
        print(open(path, "rb").read()[:200])
    assert not found, f"could read {{found}}: " + " ".join(repr(open(p, "rb").read()[:200]) for p in found[:3])
"""


def course_b_assignment(secret_paths: list[str]) -> tuple[bytes, bytes]:
    """Decode, renamed for course B, with one public test that tries to read `secret_paths`."""
    out = io.BytesIO()
    with zipfile.ZipFile(AUTOGRADER_ZIP) as original, zipfile.ZipFile(out, "w") as target:
        for item in original.infolist():
            data = original.read(item)
            if item.filename == "otter_config.json":
                data = json.dumps({**json.loads(data), "assignment_name": "decode-b"}).encode()
            if item.filename == "tests/ms_per_token.py":
                data += SNOOP.format(paths=secret_paths, canary=SECRET_ENV).encode()
            target.writestr(item, data)
    return out.getvalue(), renamed(json.loads(notebook_bytes(answered=False)))


def renamed(notebook: dict) -> bytes:
    notebook["metadata"]["otter"]["assignment_name"] = "decode-b"
    first = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    first["source"] = f"# {TITLE}\n"
    return json.dumps(notebook).encode()


def test_a_course_test_file_shows_its_students_nothing_of_the_tool(tmp_path):
    lms = start_lms(tmp_path, EXTRA_TOOL_SETTING=SECRET_ENV)
    try:
        lms.hook("resource-link", context_id="course-a", resource_link_id="course-a-link", line_item=True)
        course_a = lms.open("student-ada", "course-a-link", context_id="course-a")
        course_a.upload(notebook_bytes())
        assert course_a.wait_graded(1)[0]["score"] == 16.0  # course A's submission is in the database now
        secrets = sorted(str(p) for p in lms.tool.data_dir.rglob("*") if p.is_file())
        assert any("keys" in p for p in secrets) and any(p.endswith(".db") for p in secrets)

        autograder, handout = course_b_assignment(secrets)
        staff = staff_page(lms, "course-b")
        report = unescape(finished_build(staff, upload_zip(staff, autograder, handout, "decode-b.ipynb")))
        assert f"Added: {TITLE}" in report, report[-2000:]
        link = add_link(lms, "course-b", TITLE)
        student = lms.open("student-grace", link["resource_link_id"], context_id="course-b")
        uploaded = student.upload(renamed(json.loads(notebook_bytes())), filename="decode-b.ipynb")
        assert uploaded.status_code == 200, unescape(uploaded.text)[-1500:]
        (attempt,) = student.wait_graded(1)
        seen = json.dumps(student.session.get(f"{student.url}/attempts.json", timeout=10).json()) + unescape(
            student.session.get(student.url, timeout=10).text
        )
    finally:
        lms.tool.stop()
        lms.platform.stop()
    assert attempt["status"] == "graded" and attempt["score"] == attempt["max_score"], seen[:3000]
    assert "could read" not in seen and "PRIVATE KEY" not in seen and "SQLite format" not in seen
    assert SECRET_ENV not in seen
