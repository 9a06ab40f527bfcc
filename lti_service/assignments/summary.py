"""What an autograder zip holds, as course staff read it: questions with their points and numbers of
public and hidden tests, and the packages it needs; and what changed from one version to the next."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from autograder import inspect_assignment, load_assignment
from autograder.environment import requirements_of


@dataclass(frozen=True)
class Question:
    name: str
    points: float
    public: int
    """tests students can run (grader.check)"""
    hidden: int
    """tests only the grader runs"""

    def describe(self) -> str:
        return f"{self.points:g} points, {_tests(self.public, 'public')} and {_tests(self.hidden, 'hidden')}"


@dataclass(frozen=True)
class Summary:
    name: str | None
    """Otter's assignment name (submitted notebooks carry it)"""
    points: float
    questions: tuple[Question, ...]
    requirements: str
    """packages beyond the grader's own, "" for none"""

    def question_dicts(self) -> list[dict]:
        return [asdict(q) for q in self.questions]


def summarize(zip_path: str | os.PathLike[str]) -> Summary:
    """Read an autograder zip (AssignmentError or EnvironmentBuildError when it is not usable). Its tests are
    loaded in a grading process of their own (course code never runs in the tool's processes)."""
    manifest = inspect_assignment(zip_path)
    questions = tuple(
        Question(
            q.name,
            q.points,
            public=sum(not case.hidden for case in q.cases),
            hidden=sum(case.hidden for case in q.cases),
        )
        for q in manifest.questions
    )
    requirements = requirements_of(zip_path)
    return Summary(load_assignment(zip_path).name, manifest.points, questions, ", ".join(requirements.pip))


def questions_of(stored: list[dict]) -> list[Question]:
    """A version's questions as stored (AssignmentVersion.questions)."""
    return [Question(**q) for q in stored]


def differences(before: list[Question], after: list[Question]) -> list[str]:
    """What a new version changes, one line per question added, removed or changed, then the total."""
    old, new = {q.name: q for q in before}, {q.name: q for q in after}
    lines = [f"{name}: added ({new[name].describe()})" for name in new if name not in old]
    lines += [f"{name}: removed (was {old[name].describe()})" for name in old if name not in new]
    for name in (name for name in new if name in old and new[name] != old[name]):
        a, b = old[name], new[name]
        changes = [
            f"{what} {getattr(a, field):g} → {getattr(b, field):g}"
            for field, what in (("points", "points"), ("public", "public tests"), ("hidden", "hidden tests"))
            if getattr(a, field) != getattr(b, field)
        ]
        lines.append(f"{name}: {', '.join(changes)}")
    total_before, total_after = sum(q.points for q in before), sum(q.points for q in after)
    if total_before != total_after:
        lines.append(f"total: {total_before:g} → {total_after:g} points")
    return lines


def _tests(count: int, kind: str) -> str:
    return f"{count} {kind} test{'' if count == 1 else 's'}"
