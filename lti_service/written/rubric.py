"""A written question's rubric on one link: reusable items with points and the comment students read.

A link's rubric starts as the one the master notebook gives (seeded at its first use); staff add, change and
remove items from then on. Grades refer to items by id, so changing an item's points changes every grade that
applied it (the caller re-sends those students' scores).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from autograder.written import MAX_POINTS, MAX_RUBRIC_ITEMS, MAX_RUBRIC_TEXT

from ..db import RubricItem, WrittenGrade
from ..services import Services
from .questions import Question

RACE_RETRIES = 5  # concurrent additions each take the next position


class RubricRefused(ValueError):
    """A change the rubric cannot take; str() says why, in a teacher's words."""


def items(services: Services, key: dict, question: Question) -> list[RubricItem]:
    """The rubric's items in order (removed ones too: old grades may name them), seeded from the assignment's
    rubric the first time the question is graded on this link."""
    with services.db.session() as session:
        found = list(_items(session, key, question.name))
    if found or not question.rubric:
        return found
    try:
        with services.db.session() as session:
            for position, seed in enumerate(question.rubric, start=1):
                session.add(RubricItem(**key, question=question.name, position=position, points=seed.points,
                                       text=seed.text[:MAX_RUBRIC_TEXT], removed=False))  # fmt: skip
    except IntegrityError:  # another grader opened the question at the same moment and seeded it
        pass
    with services.db.session() as session:
        return list(_items(session, key, question.name))


def _items(session, key: dict, question: str):
    return session.scalars(select(RubricItem).filter_by(**key, question=question).order_by(RubricItem.position))


def checked(points: str, text: str) -> tuple[float, str]:
    """An item's points and text from a form, or RubricRefused."""
    try:
        value = float(points)
    except ValueError:
        raise RubricRefused("An item's points must be a number, such as 1, 0.5 or -1.") from None
    if not -MAX_POINTS <= value <= MAX_POINTS:
        raise RubricRefused(f"An item's points must be between -{MAX_POINTS:g} and {MAX_POINTS:g}.")
    text = text.strip()
    if not text:
        raise RubricRefused("Write what the item stands for: students read it with their grade.")
    if len(text) > MAX_RUBRIC_TEXT:
        raise RubricRefused(f"An item's text can be at most {MAX_RUBRIC_TEXT} characters (this one has {len(text)}).")
    return value, text


def add(services: Services, key: dict, question: Question, points: str, text: str) -> RubricItem:
    """Add an item at the next position. The count of live items and that position come from one read, so the
    position's uniqueness keeps the count true: an item added since took the position, and this one is tried
    again (two reads let racing additions pass MAX_RUBRIC_ITEMS)."""
    value, text = checked(points, text)
    for _ in range(RACE_RETRIES):
        try:
            with services.db.session() as session:
                found = list(_items(session, key, question.name))
                live = [item for item in found if not item.removed]
                if len(live) >= MAX_RUBRIC_ITEMS:
                    raise RubricRefused(
                        f"A rubric can have at most {MAX_RUBRIC_ITEMS} items: change or remove one first."
                    )
                position = max((item.position for item in found), default=0) + 1
                item = RubricItem(**key, question=question.name, position=position, points=value, text=text,
                                  removed=False)  # fmt: skip
                session.add(item)
            return item
        except IntegrityError:
            continue
    raise RubricRefused("Others changed this rubric at the same moment; add the item again.")


def change(services: Services, key: dict, item_id: int, points: str, text: str) -> list[str]:
    """Change an item's points and text; the students whose grades apply it (their scores change)."""
    value, text = checked(points, text)
    with services.db.session() as session:
        item = session.scalars(select(RubricItem).filter_by(**key, id=item_id, removed=False)).first()
        if item is None:
            raise RubricRefused("This item is no longer in the rubric (someone removed it); reload the page.")
        item.points, item.text = value, text
        return _users_applying(session, key, item)


def remove(services: Services, key: dict, item_id: int) -> list[str]:
    """Take an item out of the rubric and of the grades that applied it; those students (scores change)."""
    with services.db.session() as session:
        item = session.scalars(select(RubricItem).filter_by(**key, id=item_id)).first()
        if item is None:
            return []
        item.removed = True
        return _users_applying(session, key, item)


def _users_applying(session, key: dict, item: RubricItem) -> list[str]:
    grades = session.scalars(select(WrittenGrade).filter_by(**key, question=item.question))
    return sorted({grade.user_id for grade in grades if item.id in (grade.items or [])})
