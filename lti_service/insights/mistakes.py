"""The most common mistakes per question, read from the graders' staff results: what to re-teach, and whether
it is shrinking as the deadline approaches. Pure functions over plain data (they run in a background job's
child process, insights/runner.py). Every pattern over student text does bounded work per character (bounded
quantifiers, bounded lines): a notebook cannot make them quadratic."""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from autograder.notebook import SHAPE

MAX_STUDENTS = 5_000
MAX_HISTORY = 500  # graded attempts per student looked at for the trend (the latest ones)
MAX_CODE = 20_000  # characters of a student's answer kept
MAX_LINE = 300  # characters of a message's last line kept (it can quote student output)
MAX_VALUE = 100
MAX_GROUPS = 300  # mistakes kept (most common first): the rest, each of a student or two, would only bloat the page
MAX_CHECKED = 200  # characters of a question's name in `grader.check("...")`, and of the spaces around it
ANSWER_TAG = "otter_answer_cell"
_SPACE = rf"\s{{0,{MAX_CHECKED}}}"
CHECK = re.compile(rf"""grader\.check\({_SPACE}(['"])([^'"\\\n]{{1,{MAX_CHECKED}}})\1{_SPACE}\)""")
"""at most 3 * MAX_CHECKED steps from each `grader.check(`: a lazy `.*?` rescanned the rest of the line from
every one of them (a line of 70,000 unclosed ones took hours)"""
# numbers, not digits inside names ("gb_read_per_step", "x2"): "8e9", "-0.016", "1e-06"
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w)")
PLACEHOLDER = "<n>"
_VALUE = r"""('[^']*'|"[^"]*"|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}|[^\s,;]+)"""
# what the student's code gave, where the message names it: the first group is that value
VALUES = [
    re.compile(rf"returned {_VALUE} instead of"),
    re.compile(rf"\bgot {_VALUE},? (?:but )?expected"),
    re.compile(rf"\bexpected .+?,? (?:but )?got {_VALUE}"),
    re.compile(rf"\bassert {_VALUE} ==(?!=)"),
    re.compile(rf"^(?:\w*Error: )?{_VALUE} != "),
]


@dataclass(frozen=True)
class Graded:
    """One graded attempt; `result` is the grader's staff view (GradeResult.to_dict())."""

    user_id: str
    name: str
    at: datetime
    result: dict


@dataclass(frozen=True)
class Student:
    """A student: the attempt the gradebook counts, every graded attempt, and their code per question."""

    user_id: str
    name: str
    counting: Graded
    history: tuple[Graded, ...]
    answers: dict[str, str]


@dataclass(frozen=True)
class Example:
    user_id: str  # pages that hide names show the student's reference instead (rules/refs.py), never these
    name: str
    code: str


@dataclass(frozen=True)
class Mistake:
    question: str
    test: str
    message: str  # the failure's last line, numbers replaced by PLACEHOLDER
    value: str | None  # the wrong value the message names ("71" in "returned 71 instead of 71.4")
    students: int
    share: float  # of the students analysed
    examples: tuple[Example, ...]
    trend: tuple[int, ...]  # per day: students whose latest attempt by that day's end had this mistake


Key = tuple[str, str, str, str | None]


def common_mistakes(students: Sequence[Student], days: Sequence[date], examples: int = 3) -> list[Mistake]:
    """Failures grouped by (question, test, message, wrong value) over the counting attempts, the MAX_GROUPS
    most common first."""
    students = list(students)[:MAX_STUDENTS]
    groups: dict[Key, list[Student]] = {}
    order: dict[tuple[str, str], int] = {}
    for student in students:
        for key in with_answers(failures(student.counting.result, order), student.answers):
            groups.setdefault(key, []).append(student)
    trends = _trends(students, days, set(groups))
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), order[item[0][:2]], item[0][2:3], str(item[0][3])))
    return [
        Mistake(*key, len(members), len(members) / len(students), _examples(members, key[0], examples),
                tuple(trends.get(key, [0] * len(days))))
        for key, members in ranked[:MAX_GROUPS]
    ]  # fmt: skip


def failures(result: dict, order: dict[tuple[str, str], int] | None = None) -> set[Key]:
    """The failed tests of one staff result as group keys; `order` records where each (question, test) first
    appeared, so groups of equal size keep the assignment's question order."""
    keys = set()
    order = {} if order is None else order
    for question in _list(result.get("questions")):
        for test in _list(question.get("tests")) if isinstance(question, dict) else ():
            if not isinstance(test, dict):
                continue
            where = (str(question.get("name", ""))[:MAX_LINE], str(test.get("name", ""))[:MAX_LINE])
            order.setdefault(where, len(order))
            if test.get("passed", True):
                continue
            line = last_line(str(test.get("message") or ""))
            keys.add((*where, NUMBER.sub(PLACEHOLDER, line), wrong_value(line)))
    return keys


def with_answers(keys: set[Key], answers: dict[str, str]) -> set[Key]:
    """Keys whose message names no value take the student's own answer when it is a literal (`x = 71`): a
    hidden test that keeps its expected value secret says nothing of the wrong one, the answer does."""
    return {key if key[3] is not None else (*key[:3], literal_answer(answers.get(key[0], ""), key[0])) for key in keys}


@functools.lru_cache(maxsize=1024)  # asked again for each attempt of the trend: the answer's code is the same
def literal_answer(code: str, name: str) -> str | None:
    """The literal the answer's code assigns to `name` at its top level (the last such), or None."""
    try:
        module = ast.parse(code[:MAX_CODE])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = None
    for node in module.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and _is_literal(node.value):
            found = ast.unparse(node.value)[:MAX_VALUE]
    return found


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool)


def last_line(message: str) -> str:
    """The line of a traceback that says what went wrong (its last non-blank one), bounded."""
    tail = message[-20 * MAX_LINE :].rstrip()
    return tail.rpartition("\n")[2].strip()[:MAX_LINE]


def wrong_value(line: str) -> str | None:
    """The value the student's code produced, when the message names it."""
    for pattern in VALUES:
        if found := pattern.search(line):
            value = found.group(1)
            return (value.rstrip(".:") if value[:1] not in "'\"[({" else value)[:MAX_VALUE] or None
    return None


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _examples(members: Iterable[Student], question: str, limit: int) -> tuple[Example, ...]:
    """Up to `limit` different (non-empty) answers, so staff see the mistake's variety, not one code thrice."""
    found: dict[str, Example] = {}
    for student in members:
        code = (student.answers.get(question) or "")[:MAX_CODE]
        if len(found) >= limit:
            break
        if code.strip() and code not in found:
            found[code] = Example(student.user_id, student.name, code)
    return tuple(found.values())


def _trends(students: Sequence[Student], days: Sequence[date], keys: set[Key]) -> dict[Key, list[int]]:
    """Per group, per day: students whose latest graded attempt made by that day's end (UTC) had the mistake."""
    trends: dict[Key, list[int]] = {}
    for student in students:
        attempts = sorted(_distinct((*student.history[-MAX_HISTORY:], student.counting)), key=lambda g: _utc(g.at))
        cached: dict[int, set[Key]] = {}
        for i, day in enumerate(days):
            made = [n for n, g in enumerate(attempts) if _utc(g.at).date() <= day]
            if not made:
                continue
            latest = made[-1]
            if latest not in cached:  # the values are the counting attempt's: earlier notebooks are not read
                cached[latest] = with_answers(failures(attempts[latest].result), student.answers) & keys
            for key in cached[latest]:
                trends.setdefault(key, [0] * len(days))[i] += 1
    return trends


def _distinct(attempts: Iterable[Graded]) -> list[Graded]:
    """Each attempt once (the counting one is in the history too; a result dict is not hashable)."""
    return list({(g.user_id, g.at, id(g.result)): g for g in attempts}.values())


def _utc(moment: datetime) -> datetime:
    """Naive datetimes are UTC (how the database stores them)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def answer_codes(notebook: bytes | str | None, questions: Iterable[str]) -> dict[str, str]:
    """The code a submitted Otter notebook answers each question with: its answer cells after the previous
    `grader.check(...)` cell and before the first one checking that question ("" when there is none). One
    pass over the notebook, read once."""
    wanted = set(questions)
    found: dict[str, str] = {}
    answer: list[str] = []
    for cell in _cells(notebook):
        source = _source(cell)
        checked = [match.group(2) for match in CHECK.finditer(source)]
        for question in wanted.intersection(checked).difference(found):
            found[question] = "\n\n".join(answer)[:MAX_CODE]
        if checked:
            answer = []
        elif ANSWER_TAG in _tags(cell):
            answer.append(source)
    return {question: found.get(question, "") for question in wanted}


def _cells(notebook: bytes | str | None) -> list[dict]:
    if not notebook:
        return []
    data = notebook.encode() if isinstance(notebook, str) else bytes(notebook)
    if SHAPE.excess(data):
        return []
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return []
    cells = parsed.get("cells") if isinstance(parsed, dict) else None
    return [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"] if isinstance(cells, list) else []


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _tags(cell: dict) -> list:
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    return tags if isinstance(tags, list) else []
