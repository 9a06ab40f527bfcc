"""What the class got wrong, and who wrote alike, over real HTTP: a class of generated attempts with known
mistakes in known proportions and one pair of near-copies (renamed variables, reordered functions); the worker
computes the insights once the gradings settle, and the dashboard's page shows exactly those."""

from __future__ import annotations

import csv
import hashlib
import io
import re

from testbed.lms import Lms, StudentPage
from testbed.students_code import COPIED, notebook, renamed_and_reordered
from testbed.tool import wait_for

TOOL_ENV = {"WORKER_POLL": "0.25"}
LINK = "insights"
PER_MS = None  # `max_tokens_per_second = 1 / 14`: an expression, so no value of its own


CLASS = {  # student -> (their notebook, the mistake planted)
    "student-ada": (notebook("loops", "max_tokens_per_second_truncated"), "71"),
    "student-grace": (notebook("recursion", "max_tokens_per_second_truncated"), "71"),
    "student-hopper": (notebook("functional_reduce", "max_tokens_per_second_truncated"), "71"),
    "student-dijkstra": (notebook("helper_functions", "max_tokens_per_second_per_ms"), "per ms"),
    "student-knuth": (notebook("rearranged_formulas", "decode_time_one_step_short"), "decode_time"),
    "student-liskov": (notebook("numpy_scalars"), None),
    "student-hamilton": (notebook("sequence_copies"), None),
    "student-copy-one": (notebook(None, code=COPIED), None),
    "student-copy-two": (notebook(None, code=renamed_and_reordered(COPIED)), None),
}


def test_the_class_view_finds_the_planted_mistakes_and_the_copied_pair(lms: Lms):
    lms.hook("enrol", users=list(CLASS))
    pages = {user: lms.open(user, LINK) for user in CLASS}
    for user, (data, _) in CLASS.items():
        assert pages[user].upload(data).status_code == 200
    for page in pages.values():
        page.wait_graded(1)
    staff = lms.open("instructor-turing", LINK)
    html = wait_for(lambda: "From the attempts that count for the gradebook of 9 students" in (t := view(staff)) and t)

    rows = mistake_rows(html)
    rates = [(r["students"], r["value"]) for r in rows if r["question"] == "max_tokens_per_second"]
    assert sorted(rates, key=str) == sorted([(1, PER_MS), (3, "71")], key=str)  # "71" for three, 1/14 for one
    assert {r["question"] for r in rows} == {"max_tokens_per_second", "decode_time"}
    assert all(r["students"] == 1 for r in rows if r["question"] == "decode_time") and len(rows) > 2

    names_nobody_without_names(staff, html)

    pairs = re.findall(r"<tr><th scope=\"row\">([^<]+) and ([^<]+)</th>", html.split('id="pairs"', 1)[1])
    assert [set(pair) for pair in pairs] == [{"student-copy-one", "student-copy-two"}]  # exactly the planted pair
    side_by_side = staff.session.get(f"{staff.url}/staff/insights/pairs/0", timeout=10).text
    assert side_by_side.count("<mark>") >= 4 and "observed_lengths" in side_by_side and "seen" in side_by_side
    assert "never proof" in side_by_side and "never a penalty" in html

    similar = list(csv.DictReader(io.StringIO(staff.download("/staff/insights/similar.csv").text)))
    assert [{r["student_a"], r["student_b"]} for r in similar] == [{"student-copy-one", "student-copy-two"}]
    listed = list(csv.DictReader(io.StringIO(staff.download("/staff/insights/mistakes.csv").text)))
    assert sorted((r["question"], int(r["students"])) for r in listed) == sorted(
        (r["question"], r["students"]) for r in rows
    )


def names_nobody_without_names(staff: StudentPage, named: str) -> None:
    """The page, the side-by-side view and both downloads without names show each student as an opaque
    reference: stable across requests, and none that an LMS id gives (the unsalted hash of the written
    answers' references before, or numbers in the order of the ids) nor any name or id."""
    anonymous = view(staff, "?anonymous=1")
    side_by_side = get(staff, "/pairs/0?anonymous=1")
    downloads = "".join(
        staff.download(f"/staff/insights/{name}.csv?anonymous=1").text for name in ("mistakes", "similar")
    )
    shown = anonymous + side_by_side + downloads
    names = set(re.findall(r"<summary>([^<]+)</summary>", named))
    names |= set(re.findall(r'<tr><th scope="row">([^<]+) and ([^<]+)</th>', named)[0])
    assert "student-copy-one" in names and len(names) >= 4  # the named page names them
    users = [*CLASS, "instructor-turing"]
    old_refs = [hashlib.sha256("\n".join((str(platform), "decode-101", LINK, user)).encode()).hexdigest()[:10]
                for platform in range(1, 4) for user in users]  # fmt: skip
    assert not [text for text in [*names, *users, *old_refs] if text in shown]
    labels = re.findall(r"Student ([^\s<:,']{1,40})", shown)
    assert labels and all(re.fullmatch(r"[0-9a-f]{10}", label) for label in labels), labels
    pair = re.findall(r"<h1>Student ([0-9a-f]+) and Student ([0-9a-f]+):", side_by_side)[0]
    assert f"Student {pair[0]} and Student {pair[1]}" in anonymous  # the same students in the pairs' table
    assert set(re.findall(r"Student [0-9a-f]{10}", view(staff, "?anonymous=1"))) == set(
        re.findall(r"Student [0-9a-f]{10}", anonymous)
    )  # the same references on another request
    assert "?anonymous=1" in side_by_side.split("Back to the pairs")[0].rsplit("<a ", 1)[1]  # stays without names


def get(staff: StudentPage, path: str) -> str:
    response = staff.session.get(f"{staff.url}/staff/insights{path}", timeout=10)
    assert response.status_code == 200, response.text[:500]
    return response.text


def view(staff: StudentPage, query: str = "") -> str:
    response = staff.session.get(f"{staff.url}/staff/insights{query}", timeout=10)
    assert response.status_code == 200, response.text[:500]
    return response.text


def mistake_rows(html: str) -> list[dict]:
    """Each mistake row of the page: its question, how many students, and the value it names."""
    found = []
    for question, table in re.findall(r'<table class="mistakes" data-question="([^"]+)">(.*?)</table>', html, re.S):
        row = r'<tr data-test="[^"]+"(?: data-value="([^"]*)")?>.*?<td class="students">(\d+) '
        for value, students in re.findall(row, table, re.S):
            found.append({"question": question, "students": int(students), "value": value or None})
    return found
