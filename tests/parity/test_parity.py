"""Every notebook of the parity corpus gets the same per-question scores from this grader as from
stock `otter run` (run with the assignment's requirements installed). See testbed/parity.py for the corpus;
`python -m tests.parity NAME` compares one assignment alone.

The other tests here check the corpus itself: that it is sound (the solution gets full marks under
otter run, every other notebook loses points), that it covers what issue 11 lists, that builds are
reproducible, and that its hostile notebooks do fool stock otter run (which is why this grader must
not run tests where the student's code runs).
"""

from __future__ import annotations

import json
import zipfile

import pytest

from testbed.parity import (
    GIVEN,
    AttackTarget,
    Case,
    assignment_names,
    attacks,
    broken_submissions,
    build,
    cases,
    reference,
    saved_as,
    submission,
)

NAMES = assignment_names()


@pytest.mark.parametrize("case", cases(), ids=str)
def test_same_scores_as_otter_run(case, parity):
    expected = parity.reference(case).result()
    got, error = parity.ours(case)
    assert got.scores == expected.scores, f"this grader's error: {error}"


def test_corpus_has_enough_assignments_and_notebooks():
    assert len(NAMES) >= 8
    assert all(len(cases([name])) >= len(GIVEN) + 2 for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_otter_run_gives_full_marks_to_the_solution_alone(name, parity):
    """Stale outputs in a master (OK-format tests expect them) or a broken submission that is not
    broken would make the parity tests meaningless."""
    solution = parity.reference(Case(name, "solution")).result()
    assert solution.scores == solution.possible
    for case in cases([name]):
        if case.submission != "solution":
            graded = parity.reference(case).result()
            assert set(graded.scores) == set(solution.scores), case
            assert sum(graded.scores.values()) < sum(solution.possible.values()), case


def test_corpus_covers_what_the_issue_lists(parity):
    """The features of issue 11's proof that can be seen in the built zips and student notebooks."""
    tests, configs, files, student_sources, checked, questions = [], [], [], [], set(), set()
    for name in NAMES:
        built = parity.built(name)
        with zipfile.ZipFile(built.zip) as zf:
            tests += [zf.read(n).decode() for n in zf.namelist() if n.startswith("tests/")]
            configs.append(json.loads(zf.read("otter_config.json")))
            files += [n for n in zf.namelist() if n.startswith("files/")]
            questions |= {f"{name}:{n[6:-3]}" for n in zf.namelist() if n.startswith("tests/")}
        sources = [c.source for c in built.student.cells if c.cell_type == "code"]
        student_sources += sources
        checked |= {f"{name}:{q}" for s in sources for q in _checked_questions(s)}
    joined = "\n".join(tests)
    assert "OK_FORMAT = True" in joined and "OK_FORMAT = False" in joined
    assert any("seed" in c and "seed_variable" not in c for c in configs)
    assert any("seed_variable" in c for c in configs)
    assert any(parity.built(n).python != parity.built(NAMES[0]).python for n in NAMES), "a pip requirement"
    assert "files/data/monthly_totals.csv" in files and "data/monthly_totals.csv" in joined
    assert "'all_or_nothing': True" in joined and "all_or_nothing = True" in joined
    assert "'points': 1" in joined and "@test_case(points=2" in joined, "per-case points, both formats"
    assert "'hidden': True" in joined and "'hidden': False" in joined and "hidden=True" in joined
    assert any("grader.check_all()" in s for s in student_sources)
    assert any("grader.export(" in s for s in student_sources)
    assert checked and questions - checked, "questions with and without a check cell (check_cell: false)"
    assert any(spec.get("delete_checks") for n in NAMES for spec in broken_submissions(n).values())


def _checked_questions(source: str) -> list[str]:
    return [part.split('"')[1] for part in source.split("grader.check(")[1:]]


def test_builds_are_reproducible(parity, tmp_path):
    assert build("savings", tmp_path, shared=False).zip.read_bytes() == parity.built("savings").zip.read_bytes()


@pytest.mark.parametrize("name", sorted(attacks("gradebook")))
def test_hostile_notebooks_fool_stock_otter_run(name, parity, tmp_path):
    """A deliberate difference: otter run runs the tests where the student's code runs, so these
    wrong answers get more than they deserve there; this grader must give `expected_score`."""
    built = parity.built("gradebook")
    fooled = reference(built, submission(built, name), tmp_path, saved_as(built, name))
    assert sum(fooled.scores.values()) > AttackTarget(built).attacks()[name][1]
