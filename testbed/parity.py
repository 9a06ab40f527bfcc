"""The parity corpus: Otter assignments written here, graded by stock `otter run` and by this grader.

Each folder of `tests/parity/assignments/` is one course assignment:

- `<name>.ipynb`, the master notebook, saved with its outputs: OK-format tests take their expected
  values from the outputs of the test cells (`python -m tests.parity --refresh NAME` runs it again in
  the assignment's environment, as "Run All" in Jupyter would);
- the data files its ASSIGNMENT CONFIG lists (`files`, `autograder_files`);
- `submissions.yml`: realistic broken submissions, each replacing the answers of some questions
  (the other answers are the solution's), optionally deleting some `grader.check` cells (a student
  may; Otter then grades that question after the last cell), appending cells, and saved under another
  file name (`saved_as`; Otter's `otter.Notebook("<name>.ipynb")` then fails and no check runs).

Every assignment is graded as its solution, its unanswered student notebook and each broken
submission. The reference is stock `otter run`, run with the assignment's requirements installed
(`autograder.environment.prepare`); the comparison is per question, to the 5 decimals Otter reports.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import subprocess
import threading
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from assignment.build import repack_deterministically
from autograder import grade_submission
from autograder.environment import prepare, requirements_of
from testbed.build_cache import cached, key, otter_assign
from testbed.submissions import ROOT, OtterRun

ASSIGNMENTS = ROOT / "tests" / "parity" / "assignments"
ANSWER_TAG = "otter_answer_cell"
SOLUTION_TAG = "otter_assign_solution_cell"
REFERENCE_JOBS = 2  # stock `otter run`s at once (the machine has 2 cores)
GIVEN = ("solution", "unanswered")


@dataclass(frozen=True)
class Case:
    """One notebook of the corpus: an assignment and a submission name."""

    assignment: str
    submission: str

    def __str__(self) -> str:
        return f"{self.assignment}/{self.submission}"


@dataclass(frozen=True)
class Graded:
    """Per-question scores and maximum scores."""

    scores: dict[str, float]
    possible: dict[str, float]


def assignment_names() -> list[str]:
    return sorted(p.name for p in ASSIGNMENTS.iterdir() if (p / f"{p.name}.ipynb").is_file())


def broken_submissions(name: str) -> dict[str, dict]:
    """submissions.yml: name -> {description, answers: {question: source}, delete_checks: [question],
    append: [source], saved_as: file name}."""
    return _variants(name, "submissions")


def attacks(name: str) -> dict[str, dict]:
    """attacks.yml (hostile submissions, not parity cases): like submissions.yml, plus expected_score."""
    return _variants(name, "attacks")


@functools.cache
def _variants(name: str, kind: str) -> dict[str, dict]:
    path = ASSIGNMENTS / name / f"{kind}.yml"
    return yaml.safe_load(path.read_text()) if path.exists() else {}


def cases(names: Iterable[str] | None = None) -> list[Case]:
    return [Case(n, s) for n in names or assignment_names() for s in (*GIVEN, *broken_submissions(n))]


@dataclass(frozen=True)
class Built:
    """An assignment built with `otter assign`, ready to grade."""

    name: str
    zip: Path
    student: nbformat.NotebookNode
    answers: tuple[tuple[str, str], ...]
    """(question, solution source) for each answer cell of the student notebook, in order"""
    python: str
    """the interpreter of the assignment's environment (its requirements installed)"""


def build(name: str, workdir: Path, folder: Path | None = None, shared: bool = True) -> Built:
    """`otter assign` on a copy of the assignment's folder (of the corpus, or another version of it in
    `folder`); the zip repacked so builds are reproducible. `shared`: the build of these inputs that the test
    processes share (testbed/build_cache.py), else one made now in `workdir`."""
    folder = folder or ASSIGNMENTS / name
    afresh_in = None if shared else workdir / "assign"
    source = otter_assign(folder, f"{name}.ipynb", "--no-run-tests", afresh_in=afresh_in) / "source"
    (raw_zip,) = (source / "dist" / "autograder").glob(f"{name}-autograder_*.zip")
    workdir.mkdir(parents=True, exist_ok=True)
    zip_path = workdir / f"{name}-autograder.zip"
    repack_deterministically(raw_zip, zip_path)
    student = nbformat.read(source / "dist" / "student" / f"{name}.ipynb", as_version=4)
    solution = nbformat.read(source / "dist" / "autograder" / f"{name}.ipynb", as_version=4)
    solutions = [c.source for c in solution.cells if SOLUTION_TAG in c.metadata.get("tags", [])]
    questions = answer_questions(nbformat.read(folder / f"{name}.ipynb", as_version=4))
    environment = prepare(requirements_of(zip_path))
    return Built(name, zip_path, student, tuple(zip(questions, solutions, strict=True)), environment.python)


def answer_questions(master: nbformat.NotebookNode) -> list[str]:
    """The question of each solution code cell of a master notebook, in order."""
    questions, in_solution = [], False
    for cell, question in _cells_with_questions(master):
        first_line = cell.source.split("\n", 1)[0].strip().upper() if cell.cell_type == "raw" else ""
        if first_line in ("# BEGIN SOLUTION", "# END SOLUTION"):
            in_solution = first_line == "# BEGIN SOLUTION"
        elif in_solution and cell.cell_type == "code":
            questions.append(question["name"])
    return questions


def question_configs(master: nbformat.NotebookNode) -> list[dict]:
    """The `# BEGIN QUESTION` configurations of a master notebook (name, points, ...), in order."""
    return list({id(q): q for _, q in _cells_with_questions(master) if q}.values())


def _cells_with_questions(master: nbformat.NotebookNode) -> Iterable[tuple[nbformat.NotebookNode, dict]]:
    """Each cell with the configuration of the question it belongs to ({} before the first)."""
    question: dict = {}
    for cell in master.cells:
        header, _, body = cell.source.partition("\n")
        if cell.cell_type == "raw" and header.strip().upper() == "# BEGIN QUESTION":
            question = yaml.safe_load(body)
        yield cell, question


def submission(built: Built, name: str) -> nbformat.NotebookNode:
    """The notebook a student would submit: the student notebook with its answer cells filled in."""
    notebook = copy.deepcopy(built.student)
    if name == "unanswered":
        return notebook
    spec = {} if name == "solution" else {**broken_submissions(built.name), **attacks(built.name)}[name]
    answers = spec.get("answers", {})
    questions = [question for question, _ in built.answers]
    unknown = [q for q in answers if questions.count(q) != 1]
    assert not unknown, f"{built.name}/{name}: {unknown} must each name a question with one answer cell"
    answer_cells = [c for c in notebook.cells if ANSWER_TAG in c.metadata.get("tags", [])]
    for cell, (question, solution) in zip(answer_cells, built.answers, strict=True):
        cell.source = answers.get(question, _without_seed_lines(solution))
    deleted = {f'grader.check("{question}")' for question in spec.get("delete_checks", [])}
    notebook.cells = [c for c in notebook.cells if c.source not in deleted]
    assert len(deleted) == len(built.student.cells) - len(notebook.cells), f"{built.name}/{name}: no such check"
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in spec.get("append", [])]
    return notebook


def _without_seed_lines(source: str) -> str:
    """A student's notebook has no `# SEED` lines (`otter assign` strips them): Otter seeds for them."""
    return "\n".join(line for line in source.split("\n") if not line.rstrip().endswith("# SEED"))


def saved_as(built: Built, name: str) -> str:
    """The file name a submission is graded under: the assignment's notebook's, unless it says another."""
    spec = {} if name in GIVEN else {**broken_submissions(built.name), **attacks(built.name)}[name]
    return spec.get("saved_as", f"{built.name}.ipynb")


def reference(built: Built, notebook: nbformat.NotebookNode, workdir: Path, filename: str) -> Graded:
    """Stock `otter run` on one notebook saved as `filename`, with the assignment's environment."""
    run = OtterRun(notebook, workdir, built.zip, filename=filename, python=built.python)
    scores = run.scores()
    tests = json.loads((run.out / "results.json").read_text())["tests"]
    return Graded(scores, {t["name"]: t["max_score"] for t in tests if "score" in t})


def ours(built: Built, notebook: nbformat.NotebookNode, filename: str) -> tuple[Graded, str | None]:
    """This grader on one notebook saved as `filename`, rounded as Otter rounds; and its error, if any."""
    try:
        result = grade_submission(built.zip, nbformat.writes(notebook).encode(), file_name=filename)
    except Exception as e:  # reported by the parity test as this grader's error, beside the scores
        return Graded({}, {}), f"grade_submission raised {type(e).__name__}: {e}"
    scores = {q.name: round(q.score, 5) for q in result.questions}
    return Graded(scores, {q.name: round(q.max_score, 5) for q in result.questions}), result.error


class Corpus:
    """Builds and reference results for one session: each assignment built once, references run
    REFERENCE_JOBS at a time in the background, in the order they were asked for."""

    def __init__(self, workdir: Path, jobs: int = REFERENCE_JOBS) -> None:
        self.workdir = workdir
        self._pool = ThreadPoolExecutor(jobs, thread_name_prefix="otter-run")
        self._lock = threading.Lock()
        self._build_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._builds: dict[str, Built] = {}
        self._references: dict[Case, Future[Graded]] = {}

    def built(self, name: str) -> Built:
        with self._lock:
            build_lock = self._build_locks[name]
        with build_lock:
            if name not in self._builds:
                self._builds[name] = build(name, self.workdir / name)
            return self._builds[name]

    def notebook(self, case: Case) -> nbformat.NotebookNode:
        return submission(self.built(case.assignment), case.submission)

    def reference(self, case: Case) -> Future[Graded]:
        """Stock `otter run`'s result for a case, started (in the background) on first request."""
        with self._lock:
            if case not in self._references:
                self._references[case] = self._pool.submit(self._run_reference, case)
            return self._references[case]

    def _run_reference(self, case: Case) -> Graded:
        """Kept by its inputs' hash (testbed/build_cache.py): an unchanged case is not run again."""
        built, notebook = self.built(case.assignment), self.notebook(case)
        filename = saved_as(built, case.submission)

        def run(out: Path) -> None:
            graded = reference(built, notebook, out / "otter-run", filename)
            (out / "graded.json").write_text(json.dumps(dataclasses.asdict(graded)))

        digest = key(built.zip, nbformat.writes(notebook), built.python, "otter run", filename)
        return Graded(**json.loads((cached("otter-run", digest, run) / "graded.json").read_text()))

    def ours(self, case: Case) -> tuple[Graded, str | None]:
        built = self.built(case.assignment)
        return ours(built, self.notebook(case), saved_as(built, case.submission))

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


def refresh_outputs(name: str, workdir: Path) -> None:
    """Run a master notebook again in its assignment's environment and save it with the new outputs."""
    built = build(name, workdir)
    master = ASSIGNMENTS / name / f"{name}.ipynb"
    command = [built.python, "-m", "nbconvert", "--to", "notebook", "--execute", "--inplace", master.name]
    command.append("--ExecutePreprocessor.record_timing=False")  # no timestamps: refreshes diff cleanly
    subprocess.run(command, cwd=master.parent, check=True)


class AttackTarget:
    """A built assignment of the corpus to grade hostile notebooks against (the attack corpus of
    tests/corpus/attacks, whose cells run right after Otter's init cell, and the assignment's own
    attacks.yml)."""

    def __init__(self, built: Built) -> None:
        self.built, self.zip = built, built.zip
        master = nbformat.read(ASSIGNMENTS / built.name / f"{built.name}.ipynb", as_version=4)
        self.full_marks = float(sum(q.get("points", 1) for q in question_configs(master)))

    def with_cell(self, source: str) -> bytes:
        """The solution with one more code cell right after Otter's init cell."""
        notebook = submission(self.built, "solution")
        notebook.cells.insert(1, nbformat.v4.new_code_cell(source))
        return nbformat.writes(notebook).encode()

    def attacks(self) -> dict[str, tuple[bytes, float]]:
        """The assignment's own attacks: name -> (notebook, the score its answers honestly deserve)."""
        return {
            name: (nbformat.writes(submission(self.built, name)).encode(), float(spec["expected_score"]))
            for name, spec in attacks(self.built.name).items()
        }
