"""A teacher grades two students' written answers in the LMS's frame with the keyboard alone, and the
platform's gradebook receives each score twice: the autograded part at once, the whole score once graded."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from testbed.browser import course_launch, tool_frame
from testbed.submissions import notebook_bytes
from testbed.tool import wait_for
from tests.e2e.a11y import assert_accessible

TOOL_ENV = {"PASSBACK_BACKOFF": "0.05", "PASSBACK_MAX_BACKOFF": "0.2", "WORKER_POLL": "0.25"}
AUTOGRADED = round(100 * 16 / 18, 4)  # full marks of the automatic checks, of the line item's 100
PROVISIONAL = {"canvas": "PendingManual", "moodle": "FullyGraded"}  # Moodle empties a PendingManual grade
WRITTEN = {"student-ada": "Both right: different times.", "student-grace": "The user feels 12.5."}
PLAN = {  # answer -> the rubric items' keys the teacher presses, and the comment typed
    WRITTEN["student-ada"]: (["1", "2"], "Both rates explained."),
    WRITTEN["student-grace"]: (["1"], "Say which one the user feels."),
}


@pytest.mark.parametrize("product", ["canvas", "moodle"])
def test_a_teacher_grades_two_written_answers_with_the_keyboard(lms, page, screenshot, product):
    link = f"written-keys-{product}"
    lms.hook("config", product_family_code=product)
    try:
        lms.hook("resource-link", resource_link_id=link, line_item=True)
        for user, text in WRITTEN.items():
            student = lms.open(user, link)
            student.upload(notebook_bytes(written=text))
            student.wait_graded(1)
        for user in ("student-ada", "student-grace"):
            first = wait_for(lambda user=user: [p for p in lms.score_posts(user, link) if p["status"] == 200])[0]
            assert (first["gradingProgress"], first["scoreGiven"]) == (PROVISIONAL[product], AUTOGRADED)

        page.goto(course_launch(lms, "instructor-turing", resource_link=link))
        frame = tool_frame(page)
        for name in ("Grade written answers", "Grade two_rates", "Grade the next ungraded answer"):
            frame.get_by_role("link", name=name).focus()
            with frame.expect_navigation():
                page.keyboard.press("Enter")
        seen = []
        for _ in WRITTEN:  # in the order the tool offers them, whoever wrote them
            expect(frame.locator("#answer")).to_be_visible()
            assert_accessible(frame)
            text = frame.locator("#answer").inner_text().strip()
            seen.append(text)
            keys, comment = PLAN[text]
            for key in keys:
                page.keyboard.press(key)
            page.keyboard.press("c")
            expect(frame.locator("#comment")).to_be_focused()
            page.keyboard.type(comment)
            screenshot(page, f"{product}-grading")
            with frame.expect_navigation():
                page.keyboard.press("Control+Enter")
        expect(frame.locator("#all-graded")).to_have_text("Every answer to this question is graded.")
        assert sorted(seen) == sorted(WRITTEN.values())  # each answer shown as its student wrote it
        expect(frame.locator("#answers caption")).to_have_text("2 of 2 answers graded")

        by_user = {"student-ada": 100.0, "student-grace": round(100 * 17 / 18, 4)}  # 16 + 2, and 16 + 1, of 18
        assert wait_for(lambda: lms.gradebook(link) == by_user)
        for user, total in by_user.items():
            accepted = [p for p in lms.score_posts(user, link) if p["status"] == 200]
            assert [p["gradingProgress"] for p in accepted] == [PROVISIONAL[product], "FullyGraded"]
            points = {"student-ada": 18, "student-grace": 17}[user]
            assert accepted[-1]["scoreGiven"] == total and accepted[-1]["comment"].startswith(f"{points}/18 points")
    finally:
        lms.hook("config", product_family_code="lti-dev-platform")
