"""A second assignment for the tool's tests: `gradebook` of the parity corpus (pandas, support files the
notebook and the tests read), a version 2 of it as a course might make, and students' notebooks for it;
and a zip that is no assignment at all.

The versions are also built outside the tool (testbed/parity.py, stock `otter assign`), so that a test can
grade the same notebooks itself and know the score the gradebook must receive.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder import grade_submission
from testbed import parity

NAME = "gradebook"
FOLDER = parity.ASSIGNMENTS / NAME
MASTER = FOLDER / f"{NAME}.ipynb"
SUPPORT_FILES = (FOLDER / "data" / "gradebook.csv", FOLDER / "data" / "section_means.csv")
TITLE = "Homework 3: Cleaning a gradebook"
STUDENTS = {"student-ada": "solution", "student-grace": "zeros_for_missing"}  # who submits which notebook
NEW_TEST = '# HIDDEN\ndef test_twelve_scores(scores):\n    assert len(scores) == 12, "one score per student"\n'


def version_2(folder: Path) -> Path:
    """The master notebook's folder, changed as a course might: section_means is worth 4 points instead of 2,
    and `scores` has another hidden test. Returns the master notebook."""
    shutil.copytree(FOLDER, folder)
    master = folder / MASTER.name
    notebook = json.loads(master.read_text())
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    question = sources.index("# BEGIN QUESTION\nname: section_means\npoints: 2")
    notebook["cells"][question]["source"] = "# BEGIN QUESTION\nname: section_means\npoints: 4"
    after = next(i for i, source in enumerate(sources) if "def test_scores_keep_missing" in source)
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": "twelve",
        "metadata": {},
        "outputs": [],
        "source": NEW_TEST,
    }
    notebook["cells"].insert(after + 1, cell)
    master.write_text(json.dumps(notebook, indent=1))
    return master


@dataclass(frozen=True)
class Versions:
    """Both versions built with stock `otter assign`, and the students' notebooks (made from version 1)."""

    v1: parity.Built
    v2: parity.Built
    notebooks: dict[str, bytes]
    """by user: the notebook they submit"""

    def fraction(self, version: parity.Built, user: str) -> float:
        """The share of the points the user's notebook gets under a version, graded here."""
        result = grade_submission(version.zip, self.notebooks[user])
        assert result.error is None, result.error
        return result.score / result.max_score


def versions(workdir: Path) -> Versions:
    v1 = parity.build(NAME, workdir / "v1")
    v2 = parity.build(NAME, workdir / "v2", version_2(workdir / "v2-source").parent)
    notebooks = {user: nbformat.writes(parity.submission(v1, case)).encode() for user, case in STUDENTS.items()}
    return Versions(v1, v2, notebooks)


def student_folder(version: parity.Built, folder: Path) -> Path:
    """What students of a version get (dist/student): the notebook and the data file it reads."""
    (folder / "data").mkdir(parents=True)
    nbformat.write(version.student, folder / MASTER.name)
    shutil.copy(SUPPORT_FILES[0], folder / "data")
    return folder


def not_otter_zip() -> bytes:
    """A zip of lecture slides, uploaded where an autograder zip belongs."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("README.md", "lecture slides")
    return out.getvalue()
