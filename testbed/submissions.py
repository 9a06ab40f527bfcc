"""Submissions for the Decode assignment, built from the corpus, shared by the tests and the benchmarks.

A corpus entry is a small Python file in `tests/corpus/correct/` or `tests/corpus/wrong/`. It redefines
some answers; everything it does not define keeps the reference solution. A wrong entry names the one
question it gets wrong in `QUESTION`. The same entry can be graded two ways:

- fast: run the zip's test files in-process against the reference answers updated by the entry;
- whole notebook: the student notebook with every answer cell filled in, the entry in place of its answers.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from otter.test_files import ExceptionTestFile

from testbed import otter_forks
from testbed.otter_forks import Run

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
DIST = ROOT / "dist"
AUTOGRADER_ZIP = DIST / "autograder" / "decode-autograder.zip"
STUDENT_NOTEBOOK = DIST / "student" / "decode.ipynb"
SOLUTION_NOTEBOOK = DIST / "autograder" / "decode.ipynb"

QUESTIONS = (
    "gb_read_per_step",
    "ms_per_token",
    "max_tokens_per_second",
    "decode_step_seconds",
    "tokens_per_second",
    "decode_time",
    "generate",
    "call_order_is_sequential",
    "understanding_answer",
)
ANSWER_TAG = "otter_answer_cell"
SOLUTION_TAG = "otter_assign_solution_cell"


@dataclass(frozen=True)
class CorpusEntry:
    name: str
    kind: str  # "correct", "wrong" or "attacks"
    question: str | None  # the question a wrong entry gets wrong
    description: str
    source: str


def corpus(kind: str) -> list[CorpusEntry]:
    """Every entry of one kind ("correct" or "wrong"), sorted by name."""
    entries = []
    for path in sorted((CORPUS / kind).glob("*.py")):
        source = path.read_text()
        module = ast.parse(source)
        question = None
        for node in module.body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["QUESTION"]:
                question = ast.literal_eval(node.value)
        entries.append(CorpusEntry(path.stem, kind, question, ast.get_docstring(module) or "", source))
    return entries


def load_test_sources(zip_path: Path = AUTOGRADER_ZIP) -> dict[str, str]:
    """Test file source per question, read from the autograder zip."""
    with zipfile.ZipFile(zip_path) as archive:
        return {
            Path(name).stem: archive.read(name).decode()
            for name in archive.namelist()
            if name.startswith("tests/") and name.endswith(".py")
        }


def tagged_sources(notebook: nbformat.NotebookNode, tag: str) -> list[str]:
    return [c.source for c in notebook.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


def reference_answers() -> list[str]:
    """The solution cells of the solution notebook, in notebook order."""
    return tagged_sources(nbformat.read(SOLUTION_NOTEBOOK, as_version=4), SOLUTION_TAG)


def env_for(entry: CorpusEntry | None) -> dict:
    """The globals a notebook with the reference answers, then the entry's code, would end with."""
    env: dict = {}
    for source in reference_answers():
        exec(compile(source, "<reference>", "exec"), env)
    if entry is not None:
        exec(compile(entry.source, f"<corpus {entry.name}>", "exec"), env)
    return env


@dataclass(frozen=True)
class QuestionScore:
    score: float
    possible: float
    failures: tuple[str, ...]  # Otter's message for every failed test case


def score_env(env: dict, test_sources: dict[str, str]) -> dict[str, QuestionScore]:
    """Run every test file against `env` exactly as Otter's exception-based runner does."""
    scores = {}
    for question, source in test_sources.items():
        test_file = ExceptionTestFile.from_string(source, path=f"tests/{question}.py")
        test_file.run(env)
        failures = tuple(r.message for r in test_file.test_case_results if not r.passed)
        scores[question] = QuestionScore(test_file.score, test_file.possible, failures)
    return scores


def defined_questions(source: str) -> set[str]:
    """The questions whose answer a piece of code (re)defines at top level."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names & set(QUESTIONS)


def submission_notebook(
    entry: CorpusEntry | None = None, answered: bool = True, written: str | None = None
) -> nbformat.NotebookNode:
    """The student notebook as a student would submit it.

    answered=False leaves it untouched. Otherwise every code answer cell holds the reference solution, and an
    entry's code takes the place of the first answer it redefines (the answer cells it redefines are
    emptied); an entry that answers nothing (an attack) runs right after Otter's init cell. Otter grades
    a question when its `grader.check` cell runs, so the entry must come before those checks.
    """
    notebook = nbformat.read(STUDENT_NOTEBOOK, as_version=4)
    if written is not None:  # the answer to the question course staff grade (a Markdown answer cell)
        (cell,) = [c for c in notebook.cells if c.cell_type == "markdown" and ANSWER_TAG in c.metadata.get("tags", [])]
        cell.source = written
    if not answered:
        return notebook
    if entry is not None and not defined_questions(entry.source):
        notebook.cells.insert(1, nbformat.v4.new_code_cell(entry.source))
    answer_cells = [c for c in notebook.cells if c.cell_type == "code" and ANSWER_TAG in c.metadata.get("tags", [])]
    references = reference_answers()
    assert len(answer_cells) == len(QUESTIONS)
    replaced = defined_questions(entry.source) if entry else set()
    placed = False
    for cell, reference in zip(answer_cells, references, strict=True):
        if not defined_questions(reference) & replaced:
            cell.source = reference
        elif not placed:
            cell.source, placed = entry.source, True
        else:
            cell.source = "# answered above"
    return notebook


def notebook_bytes(entry_name: str | None = None, answered: bool = True, written: str | None = None) -> bytes:
    """submission_notebook, of the corpus entry named `entry_name`, as the bytes of its file."""
    entry = None
    if entry_name:
        (entry,) = [e for kind in ("correct", "wrong") for e in corpus(kind) if e.name == entry_name]
    return nbformat.writes(submission_notebook(entry, answered=answered, written=written)).encode()


def slow_notebook(seconds: float) -> bytes:
    """The full-marks notebook with a last cell that sleeps: its grading lasts that long."""
    notebook = nbformat.reads(notebook_bytes().decode(), as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(f"import time\ntime.sleep({seconds})"))
    return nbformat.writes(notebook).encode()


class OtterRun:
    """Stock `otter run` on one notebook, started in the background so several can run at once (a fork of a
    process that has imported Otter: testbed/otter_forks.py).

    The file is named like the assignment's notebook (`filename`): under another name Otter's injected
    `otter.Notebook("decode.ipynb")` fails and its `grader.check` calls are skipped. `python` is the
    interpreter that runs Otter and the kernel (an assignment's environment, for its packages). `fork=False`
    starts `python -m otter run` from nothing, as a benchmark of stock Otter must.
    """

    # Two kernels starting at once can race for the same ports (jupyter_client picks free ports, then
    # binds them later); the loser dies before answering, or never answers (seen in a fresh clone's
    # `make test`). Such a run, which failed before the notebook's first cell, is started again, once.
    STARTUP_RACE = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")

    def __init__(
        self,
        notebook: nbformat.NotebookNode,
        workdir: Path,
        zip_path: Path = AUTOGRADER_ZIP,
        filename: str = "decode.ipynb",
        python: str = sys.executable,
        fork: bool = True,
    ) -> None:
        self.submission, self.out = workdir / "sub" / filename, workdir / "out"
        self.submission.parent.mkdir(parents=True)
        self.out.mkdir()
        nbformat.write(notebook, self.submission)
        self.python, self.fork = python, fork
        self.args = ["run", "-a", str(zip_path), "-o", str(self.out), str(self.submission)]
        self.stderr = workdir / "otter-run.stderr"
        self.run = self._start()

    def _start(self) -> Run:
        return otter_forks.start(self.python, self.args, self.stderr, self.fork)

    def _wait(self, timeout: float) -> int:
        """otter run's exit status once it has finished; past the timeout it is killed with its kernel."""
        try:
            return self.run.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.run.started(timeout=10), signal.SIGKILL)
            self.run.wait(timeout=60)
            raise

    def scores(self, timeout: float = 300) -> dict[str, float]:
        """Per-question scores from results.json, once the run has finished."""
        code = self._wait(timeout)
        if code != 0 and any(message in self.stderr.read_text() for message in self.STARTUP_RACE):
            self.run = self._start()
            code = self._wait(timeout)
        if code != 0:
            raise RuntimeError(f"otter run failed: {self.stderr.read_text()[-2000:]}")
        results = json.loads((self.out / "results.json").read_text())
        scores = {t["name"]: t["score"] for t in results["tests"] if "score" in t}
        if not scores:  # Otter's "Autograder Failed": no question was graded
            raise RuntimeError(f"otter run graded nothing: {json.dumps(results['tests'])[:2000]}")
        return scores
