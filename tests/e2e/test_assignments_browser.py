"""Many assignments in one course, in a real browser inside the LMS's iframe: an instructor adds a second
assignment (gradebook, a pandas assignment of the parity corpus) by uploading its master notebook, links both
assignments into the course, two students submit to each, and the gradebook holds the four scores in two
columns; then the instructor uploads a new version, moves the link to it after comparing the regraded scores,
and the changed scores reach the gradebook."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from autograder import grade_submission
from testbed.browser import ToolFrame, course_launch, tool_frame, upload
from testbed.submissions import AUTOGRADER_ZIP, notebook_bytes
from testbed.tool import wait_for
from tests.e2e.a11y import assert_accessible
from tests.lti_service import gradebook

DECODE = "Decode: one token at a time"
COURSE = "course-many"
GRADING_TIMEOUT_MS = 90_000
BUILD_TIMEOUT_MS = 90_000  # otter assign in its sandbox, then the solution graded
NAMES = {"student-ada": "Ada Lovelace", "student-grace": "Grace Hopper"}
WRITTEN = {DECODE: 2.0, gradebook.TITLE: 0.0}  # points of written answers staff grade later
TOOL_ENV = {"COURSE_ASSIGNMENTS": "1"}  # course staff add their own assignments (the default, said explicitly)


def test_an_instructor_adds_links_and_updates_a_second_assignment(lms, page, screenshot, tmp_path, versions):
    # The instructor adds gradebook to the course from the deep-linking page: master notebook and its data.
    page.goto(course_launch(lms, "instructor-turing", context_id=COURSE, kind="deeplink"))
    frame = tool_frame(page)
    frame.get_by_role("link", name="Add your own assignment to this course").click()
    expect(frame.locator("h1")).to_have_text("Assignments of this course")
    screenshot(page, "course-assignments")
    assert_accessible(frame)
    build_report = upload_master(page, frame, gradebook.MASTER)
    expect(build_report.locator("h1")).to_have_text(f"Added: {gradebook.TITLE}")
    expect(build_report.locator("#questions tbody tr")).to_have_count(5)
    expect(build_report.locator("#questions tfoot")).to_contain_text("11")
    expect(build_report.locator("#environment")).to_contain_text("nothing to install")
    expect(build_report.locator("#in-browser")).to_contain_text("students can open it there")  # pandas runs there
    screenshot(page, "assignment-added")
    assert_accessible(build_report)

    # Both assignments go into the course, each with its own gradebook column.
    build_report.get_by_role("link", name="Choose an assignment for the course").click()
    links = {gradebook.TITLE: choose(page, lms, gradebook.TITLE, screenshot)}
    page.goto(course_launch(lms, "instructor-turing", context_id=COURSE, kind="deeplink"))
    links[DECODE] = choose(page, lms, DECODE)
    columns = {i["label"]: i for i in lms.state()["line_items"] if i["context_id"] == COURSE}
    assert {label: item["score_maximum"] for label, item in columns.items()} == {gradebook.TITLE: 11.0, DECODE: 18.0}

    # Two students submit to each; the gradebook holds four scores in two columns.
    decode_notebooks = {"student-ada": notebook_bytes(), "student-grace": notebook_bytes("generate_calls_on_prompt")}
    notebooks = {gradebook.TITLE: versions.notebooks, DECODE: decode_notebooks}
    zips = {gradebook.TITLE: versions.v1.zip, DECODE: AUTOGRADER_ZIP}
    for title, link in links.items():
        for user, notebook in notebooks[title].items():
            submit(page, lms, user, link, notebook, tmp_path)
    expected = {
        (NAMES[user], title): score_text(zips[title], notebook, columns[title]["score_maximum"], WRITTEN[title])
        for title in links
        for user, notebook in notebooks[title].items()
    }
    assert len(set(expected.values())) == 4 and len(expected) == 4  # right and wrong answers, in both columns
    wait_for_gradebook(page, lms, expected)
    screenshot(page, "gradebook-four-scores")

    # A new version of gradebook: uploaded from the dashboard's course assignments, with what it changes.
    page.goto(course_launch(lms, "instructor-turing", context_id=COURSE, resource_link=links[gradebook.TITLE]))
    frame = tool_frame(page)
    frame.get_by_role("link", name="This course's assignments").click()
    build_report = upload_master(page, frame, gradebook.version_2(tmp_path / "v2"), new_version_of=gradebook.TITLE)
    expect(build_report.locator("#changes")).to_contain_text("section_means: points 2 → 4")
    expect(build_report.locator("#changes")).to_contain_text("scores: hidden tests 1 → 2")
    screenshot(page, "new-version-added")

    # The instructor moves the link: every submission regraded, the scores compared, then sent.
    build_report.get_by_role("link", name="Back to the dashboard").click()
    frame = tool_frame(page)
    frame.get_by_role("link", name="See what it changes and move this link to it").click()
    expect(frame.locator("#changes")).to_contain_text("total: 11 → 13 points")
    screenshot(page, "move-review")
    assert_accessible(frame)
    frame.get_by_role("button", name="Regrade against version 2").click()
    frame = tool_frame(page)
    send = frame.get_by_role("button", name="Send the new scores and move the link to version 2")
    expect(send).to_be_enabled(timeout=GRADING_TIMEOUT_MS)  # the page reloads once every submission is regraded
    frame = tool_frame(page)
    grace = frame.locator('#comparison tr[data-user="student-grace"]')
    after = versions.fraction(versions.v2, "student-grace") * 13
    expect(grace.locator(".after .points")).to_have_text(f"{round(after, 2):g}")
    expect(frame.locator('#comparison tr[data-user="student-ada"] td').last).to_have_text("no")  # 100% either way
    screenshot(page, "move-comparison")
    assert_accessible(frame)
    frame.get_by_role("button", name="Send the new scores and move the link to version 2").click()
    frame = tool_frame(page)
    expect(frame.locator("#link-version")).to_contain_text(f"This link uses version 2 of {gradebook.TITLE}")
    moved = versions.fraction(versions.v2, "student-grace") * 11  # the column keeps its maximum
    expected[(NAMES["student-grace"], gradebook.TITLE)] = f"{round(moved, 4):g}/11"
    wait_for_gradebook(page, lms, expected)
    screenshot(page, "gradebook-after-the-move")


def upload_master(page: Page, frame: ToolFrame, master, new_version_of: str | None = None) -> ToolFrame:
    """Upload a master notebook with its data on the course's assignments page; the build's report."""
    form = frame.locator("#add-master")
    if new_version_of:
        form.get_by_label("This is").select_option(label=f"a new version of {new_version_of} ({gradebook.NAME})")
    form.get_by_label("Master notebook (.ipynb)").set_input_files(master)
    form.locator("#master-files").set_input_files([master.parent / "data" / f.name for f in gradebook.SUPPORT_FILES])
    form.get_by_role("button", name="Upload and build").click()  # sent with a progress bar, then the build's page
    frame.locator("h1", has_text="Added").wait_for(timeout=BUILD_TIMEOUT_MS)
    return tool_frame(page)


def choose(page: Page, lms, title: str, screenshot=None) -> str:
    """On the deep-linking page: choose the assignment and return to the course; the new link's id."""
    frame = tool_frame(page)
    expect(frame.locator("h1")).to_have_text("Add an assignment to your course")
    frame.get_by_label(f"{title} (").check()
    if screenshot:
        screenshot(page, "deep-linking-two-assignments")
        assert_accessible(frame)
    frame.get_by_role("button", name="Add to the course").click()
    expect(frame.locator("h1")).to_have_text("Activities added")
    return [i for i in lms.state()["deep_link_items"] if i["context_id"] == COURSE][-1]["resource_link_id"]


def submit(page: Page, lms, user: str, link: str, notebook: bytes, tmp_path) -> None:
    page.goto(course_launch(lms, user, context_id=COURSE, resource_link=link))
    frame = tool_frame(page)
    path = tmp_path / user / "notebook.ipynb"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(notebook)
    upload(frame, path)
    frame.locator(".attempt[data-status=graded]").wait_for(timeout=GRADING_TIMEOUT_MS)


def score_text(zip_path, notebook: bytes, maximum: float, written: float) -> str:
    """What the gradebook must show for a notebook: its share of the points (of the autograded and `written`
    points: staff grade written answers later), on the column's maximum."""
    result = grade_submission(zip_path, notebook)
    return f"{round(result.score / (result.max_score + written) * maximum, 4):g}/{maximum:g}"


def wait_for_gradebook(page: Page, lms, expected: dict[tuple[str, str], str]) -> None:
    """The platform's gradebook page shows exactly these scores for the course: (student, column) -> score."""

    def shown() -> bool:
        page.goto(f"{lms.platform.url}/gradebook")
        cells = page.locator("table tbody tr").evaluate_all(
            "rows => rows.map(row => [...row.cells].map(cell => cell.textContent.trim()))"
        )
        return {(user, label): score for course, user, label, score, *_ in cells if course == COURSE} == expected

    wait_for(shown, timeout=60, interval=0.5)
