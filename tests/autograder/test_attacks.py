"""The attack corpus against the real Decode assignment: every attack fails at what it tries.

Each notebook in tests/corpus/attacks/ is the reference submission plus one hostile cell (or hostile
answers). For each one: the score equals what its honest answers deserve (EXPECTED_SCORE), the student
view holds no hidden test, nothing was written or left running on the host, and grading ended within
its limits. Attacks that hang or crash cost their cell only: the grader replays the other cells.
"""

from __future__ import annotations

import ast
import json
import socket
import time
from dataclasses import replace

import nbformat
import pytest

from autograder import GradeOptions, grade_submission
from autograder.pool import close_all
from testbed.host import host_artifacts, sandbox_processes
from testbed.submissions import (
    AUTOGRADER_ZIP,
    CorpusEntry,
    corpus,
    defined_questions,
    load_test_sources,
    submission_notebook,
)

ATTACKS = corpus("attacks")
OPTIONS = GradeOptions(cell_timeout=2.0, test_timeout=2.0, grace=0.5, total_timeout=60, memory_mb=512)
CANARY = "grader-secret-canary-7f3a"


def expected_score(source: str) -> float:
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["EXPECTED_SCORE"]:
            return float(ast.literal_eval(node.value))
    raise AssertionError("an attack must state EXPECTED_SCORE")


def hidden_test_texts(test_sources) -> list[str]:
    """What only hidden test cases hold: their names, assertion messages and inputs (list literals of three
    or more items that no public test uses). None of it may reach a student."""
    texts, public_inputs, hidden_inputs = [], set(), set()
    for source in test_sources.values():
        for node in ast.parse(source).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            inputs = {ast.unparse(n) for n in ast.walk(node) if isinstance(n, ast.List) and len(n.elts) >= 3}
            if "hidden=True" in ast.unparse(node.decorator_list[0]):
                texts.append(node.name)
                texts += [text for a in ast.walk(node) if isinstance(a, ast.Assert) and a.msg for text in fixed(a.msg)]
                hidden_inputs |= inputs
            else:
                public_inputs |= inputs
    return texts + sorted(hidden_inputs - public_inputs)


def fixed(message: ast.expr) -> list[str]:
    """An assertion message's own text: a string, or the literal parts of an f-string (those of a few words:
    the inputs a hidden test drew go between them)."""
    if isinstance(message, ast.JoinedStr):
        parts = [part.value for part in message.values if isinstance(part, ast.Constant)]
        return [part for part in parts if len(part.split()) >= 4]
    return [ast.literal_eval(message)]


@pytest.fixture
def loopback_listener():
    """A listener on the host's loopback that no submission may reach."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        yield server


def test_attack_corpus_is_complete():
    assert len(ATTACKS) >= 15


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_fails(attack, test_sources, loopback_listener, monkeypatch):
    notebook = submission_notebook(with_port(attack, loopback_listener))
    graded = Graded(AUTOGRADER_ZIP, nbformat.writes(notebook).encode(), OPTIONS, monkeypatch)
    assert graded.result.score == expected_score(attack.source)
    graded.assert_contained(test_sources, loopback_listener)


# Fails every hidden test with the inputs it was given: the staff view shows what each hidden test drew.
REPORTS_ITS_INPUTS = CorpusEntry("reports_its_inputs", "attacks", None, "", """
def decode_step_seconds(param_bytes, bandwidth):
    if (param_bytes, bandwidth) != (8e9, 2e12):  # the public test's own call
        raise ValueError(f"called with {param_bytes!r}, {bandwidth!r}")
    return param_bytes / bandwidth
""")  # fmt: skip


def test_two_gradings_draw_different_hidden_inputs():
    """Hidden tests draw their inputs in the grading process, forked from a zygote as a service grades:
    learning one grading's inputs (by timing it, say) tells nothing about the next one's."""
    notebook = nbformat.writes(submission_notebook(REPORTS_ITS_INPUTS)).encode()
    try:
        results = [grade_submission(AUTOGRADER_ZIP, notebook, replace(OPTIONS, prestart=1)) for _ in range(2)]
    finally:
        close_all()
    drawn = [
        [t.message for q in r.questions if q.name == "decode_step_seconds" for t in q.tests if t.hidden]
        for r in results
    ]
    assert len(drawn[0]) == 3 and all("ValueError: called with" in message for message in drawn[0] + drawn[1])
    assert [first == second for first, second in zip(*drawn, strict=True)] == [False] * 3


# The corpus again, against an assignment of another kind: pandas, support files read by the notebook
# and by the tests (so its tests run in a grading process of their own), exception tests taking `pd`;
# graded as a service grades, with processes started ahead (`prestart`): the grading process and the
# student's sandbox are forked from zygotes.
GENERIC = [attack for attack in ATTACKS if not defined_questions(attack.source)]
PANDAS_OPTIONS = replace(OPTIONS, cell_timeout=5.0, test_timeout=5.0, memory_mb=1024, prestart=1)
# memory_bomb keeps what it allocated in a global: the notebook's own next cell cannot import pandas in
# what is left of the sandbox's memory (under any limit), so only its containment is checked here.
KEEPS_THE_SANDBOXS_MEMORY = {"memory_bomb"}


@pytest.mark.parametrize("attack", GENERIC, ids=lambda a: a.name)
def test_attack_fails_against_a_pandas_assignment(attack, pandas_assignment, loopback_listener, monkeypatch):
    notebook = pandas_assignment.with_cell(with_port(attack, loopback_listener).source)
    graded = Graded(pandas_assignment.zip, notebook, PANDAS_OPTIONS, monkeypatch)
    if attack.name not in KEEPS_THE_SANDBOXS_MEMORY:
        assert graded.result.score == pandas_assignment.full_marks
    graded.assert_contained(load_test_sources(pandas_assignment.zip), loopback_listener)


def test_the_pandas_assignments_own_attacks_get_what_their_answers_deserve(pandas_assignment, monkeypatch):
    """Patched libraries and lying subclasses fool `otter run` into (nearly) full marks; here the tests use
    the grader's own pandas and NumPy on the answers' real data."""
    for name, (notebook, deserved) in pandas_assignment.attacks().items():
        graded = Graded(pandas_assignment.zip, notebook, PANDAS_OPTIONS, monkeypatch)
        assert graded.result.score == deserved, name


def with_port(attack, listener):
    return replace(attack, source=attack.source.replace("PORT = 0", f"PORT = {listener.getsockname()[1]}"))


class Graded:
    """One hostile notebook graded, with what the host looked like before."""

    def __init__(self, zip_path, notebook: bytes, options, monkeypatch) -> None:
        monkeypatch.setenv("GRADER_SECRET", CANARY)
        self.options, self.before = options, host_artifacts()
        started = time.monotonic()
        self.result = grade_submission(zip_path, notebook, options)
        self.elapsed = time.monotonic() - started
        close_all()  # the processes started ahead for the next grading, if any
        assert self.result.error is None

    def assert_contained(self, test_sources, listener) -> None:
        """Nothing hidden in the student view, no secret anywhere, nothing left on the host, no limit broken."""
        student_view = json.dumps(self.result.to_dict(student_view=True))
        assert [text for text in hidden_test_texts(test_sources) if text in student_view] == []
        assert CANARY not in json.dumps(self.result.to_dict())
        assert host_artifacts() - self.before == set()
        assert self.result.usage["peak_memory_mb"] <= self.options.memory_mb  # all processes together
        assert sandbox_processes() == []
        with pytest.raises(BlockingIOError):
            listener.accept()
        assert self.elapsed < self.options.total_timeout
