"""Anonymous grading hides who wrote an answer from the graders (issue 41): the references in its URLs and its
order are keyed with the tool's secret, so no one who knows the students' LMS ids (any classmate, any TA) can
compute them; the same student keeps the same reference on the link."""

from __future__ import annotations

import hashlib
import re
from types import SimpleNamespace

from lti_service.config import Config
from lti_service.rules.refs import student_ref
from testbed.lms import Lms, StudentPage
from testbed.submissions import notebook_bytes

LINK = "written-anonymous"
QUESTION = "two_rates"
STUDENTS = ("student-ada", "student-grace", "student-hopper")
KEY = dict(platform_id=1, context_id="decode-101", resource_link_id=LINK)


def unsalted(key: dict, user_id: str) -> str:
    """The reference before: anyone with the LMS ids could compute it."""
    text = "\n".join((str(key["platform_id"]), key["context_id"], key["resource_link_id"], user_id))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def services_with(secret: str) -> SimpleNamespace:
    return SimpleNamespace(config=Config(secret_key=secret))


def test_a_reference_depends_on_the_secret_the_link_and_the_student():
    first = student_ref(services_with("one secret"), KEY, "student-ada")
    assert first == student_ref(services_with("one secret"), dict(KEY), "student-ada")  # stable
    assert re.fullmatch(r"[0-9a-f]{20}", first) and first != unsalted(KEY, "student-ada")
    assert first != student_ref(services_with("another secret"), KEY, "student-ada")
    assert first != student_ref(services_with("one secret"), {**KEY, "resource_link_id": "other"}, "student-ada")
    assert first != student_ref(services_with("one secret"), KEY, "student-grace")


def answers_page(staff: StudentPage) -> str:
    response = staff.session.get(f"{staff.url}/staff/written/{QUESTION}", timeout=30)
    assert response.status_code == 200, response.text[:500]
    return response.text


def test_anonymous_grading_shows_references_nobody_can_compute_from_lms_ids(lms: Lms):
    lms.hook("enrol", users=list(STUDENTS))
    for number, user in enumerate(STUDENTS):
        student = lms.open(user, LINK)
        assert student.upload(notebook_bytes(written=f"{20 + number} tokens/s, the steady rate.")).status_code == 200
        student.wait_graded(1)
    staff = lms.open("instructor-turing", LINK)
    names = re.findall(r'data-ref="[0-9a-f]+"><th scope="row"><a [^>]*>([^<]+)</a>', answers_page(staff))
    assert len(names) == len(STUDENTS) and "Ada Lovelace" in names  # with names, before
    form = {"csrf_token": staff.csrf, "anonymous": "on"}
    assert staff.session.post(f"{staff.url}/staff/written/settings", data=form, timeout=30).status_code == 200

    html = answers_page(staff)
    refs = re.findall(r'data-ref="([0-9a-f]+)"', html)
    assert len(refs) == len(STUDENTS) and "Answer 1" in html
    old = {unsalted({**KEY, "platform_id": platform}, user) for platform in range(1, 4) for user in STUDENTS}
    assert not [ref for ref in old if ref in html or ref[:10] in html]
    assert not [who for who in (*STUDENTS, *names) if who in html]
    assert re.findall(r'data-ref="([0-9a-f]+)"', answers_page(staff)) == refs  # the same on every request
    for ref in refs:
        page = staff.session.get(f"{staff.url}/staff/written/{QUESTION}/{ref}", timeout=30)
        assert page.status_code == 200 and not [who for who in (*STUDENTS, *names) if who in page.text]
