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
from tests.autograder.host import host_artifacts, sandbox_processes
from tests.submissions import AUTOGRADER_ZIP, corpus, submission_notebook

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
                texts += [ast.literal_eval(a.msg) for a in ast.walk(node) if isinstance(a, ast.Assert) and a.msg]
                hidden_inputs |= inputs
            else:
                public_inputs |= inputs
    return texts + sorted(hidden_inputs - public_inputs)


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
    monkeypatch.setenv("GRADER_SECRET", CANARY)
    port = loopback_listener.getsockname()[1]
    notebook = submission_notebook(replace(attack, source=attack.source.replace("PORT = 0", f"PORT = {port}")))
    before = host_artifacts()

    started = time.monotonic()
    result = grade_submission(AUTOGRADER_ZIP, nbformat.writes(notebook).encode(), OPTIONS)
    elapsed = time.monotonic() - started

    assert result.error is None
    assert result.score == expected_score(attack.source)
    student_view = json.dumps(result.to_dict(student_view=True))
    assert [text for text in hidden_test_texts(test_sources) if text in student_view] == []
    assert CANARY not in json.dumps(result.to_dict())
    assert host_artifacts() - before == set()
    assert result.usage["peak_memory_mb"] <= OPTIONS.memory_mb  # every process of the sandbox together
    assert sandbox_processes() == []
    with pytest.raises(BlockingIOError):
        loopback_listener.accept()
    assert elapsed < OPTIONS.total_timeout
