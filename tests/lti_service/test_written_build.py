"""Where a version's written questions come from: the master notebook (names, points, rubric), the student
notebook alone (an autograder zip's course), the built-in Decode through its migration; and a master notebook
in Otter's older format, which Otter 7 would build with the solutions in the students' notebook, is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from lti_service.assignments.building import BuildError, master_config, written_questions
from lti_service.config import Config
from lti_service.db import AssignmentVersion, LinkSettings
from lti_service.services import Services
from lti_service.written.questions import DEFAULT_POINTS, link_questions, total_points, written_points
from testbed.submissions import ROOT, STUDENT_NOTEBOOK

MASTER = ROOT / "assignment" / "decode.ipynb"
OLD_FORMAT = Path(__file__).resolve().parent.parent / "written_corpus" / "ps88-lab3" / "master.ipynb"


def test_the_master_notebook_gives_names_points_and_the_rubric():
    (question,) = written_questions(MASTER.read_bytes(), STUDENT_NOTEBOOK.read_bytes())
    assert (question.name, question.points) == ("two_rates", 2.0)
    assert [item.points for item in question.rubric] == [1.0, 1.0, -0.5, 0.0]
    assert question.prompt.startswith("**Worked example, in your words.**")


def test_the_student_notebook_alone_gives_the_questions_without_points():
    (question,) = written_questions(None, STUDENT_NOTEBOOK.read_bytes())
    assert question.points is None and question.rubric == () and "12.5 tokens/s" in question.prompt


def test_a_master_in_otters_older_format_is_refused_with_what_to_do():
    with pytest.raises(BuildError, match="older format .* would hold the solutions and the hidden tests"):
        master_config(OLD_FORMAT.read_bytes())


def test_the_built_in_decode_has_its_written_question_out_of_18_points(tmp_path, built_assignment):
    services = Services.from_config(Config(data_dir=tmp_path))
    with services.db.session() as session:
        (version,) = session.scalars(select(AssignmentVersion)).all()
    written = version.written_questions
    assert [q["name"] for q in written] == ["two_rates"] and len(written[0]["rubric"]) == 4
    assert (version.points, written_points(version), total_points(version)) == (16.0, 2.0, 18.0)


def test_a_question_without_points_gets_what_staff_set_on_the_link():
    """An autograder zip's course: the student notebook names no points; 1 until staff set them, then theirs."""
    (question,) = written_questions(None, STUDENT_NOTEBOOK.read_bytes())
    version = AssignmentVersion(points=16.0, written_questions=[question.to_dict()])
    assert [q.points for q in link_questions(version, LinkSettings(written_points={}))] == [DEFAULT_POINTS]
    assert [q.points for q in link_questions(version, LinkSettings(written_points={question.name: 4.0}))] == [4.0]
    assert total_points(version) == 16.0 + DEFAULT_POINTS
