"""Grading written answers, question by question across students (as Gradescope does): course staff of the
link only. Every save and rubric change sends the students' scores again (gradebook/passback.py)."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, abort, redirect, render_template, request, url_for

from autograder.written import MAX_POINTS, MAX_RUBRIC_TEXT

from ..assignments import versions
from ..db import Attempt, Launch
from ..gradebook.passback import requeue
from ..rules.settings import counting_attempt, link_key, load, save
from ..written import grades, rubric
from ..written.questions import Question, as_written, find, link_questions
from ..written.render import notebook_answer_html, prompt_html
from . import queue, services
from .downloads import csv_download
from .launches import check_csrf, csrf_token
from .staff import staff_launch

bp = Blueprint("written", __name__, url_prefix="/a/<launch_id>/staff/written")
WRITTEN_COLUMNS = ("user_id", "name", "attempt", "question", "kind", "points", "max_points", "rubric_items", "comment")


@dataclass(frozen=True)
class Link:
    """What every page of this blueprint works from: the launch, its link's questions, grades and rubric."""

    launch: Launch
    key: dict
    policy: str
    anonymous: bool
    released: bool
    questions: list[Question]
    book: grades.Book

    def question(self, name: str) -> Question:
        found = find(self.questions, name)
        if found is None:
            abort(404, "This assignment has no written question of that name.")
        return found

    def answers(self, question: Question) -> list[grades.Answer]:
        return grades.answers_to_grade(services(), self.key, self.policy, question, self.book)

    def label(self, answer: grades.Answer, position: int) -> str:
        """Who wrote it, as graders see it: the student's name, or only its place under anonymous grading."""
        return f"Answer {position + 1}" if self.anonymous else answer.user_name


def _link(launch_id: str) -> Link:
    launch = staff_launch(launch_id)
    key = link_key(launch)
    settings = load(services(), key)
    questions = link_questions(versions.version_for(services(), launch), settings)
    for question in questions:
        rubric.items(services(), key, question)  # seeded from the assignment's rubric at first use
    book = grades.book(services(), key, questions)
    return Link(launch, key, settings.score_policy, settings.anonymous_grading, settings.written_released,
                questions, book)  # fmt: skip


def _resend(link: Link, user_ids: list[str]) -> None:
    for passback_id in requeue(services(), link.key, user_ids):
        queue().submit(queue().send_score, passback_id)


@bp.get("")
def overview(launch_id: str):
    """The written questions, how far grading is, and the switches for the whole assignment."""
    link = _link(launch_id)
    progress = {q.name: _progress(link.answers(q)) for q in link.questions}
    return render_template("written.html", link=link, progress=progress, csrf_token=csrf_token(link.launch),
                           max_points=MAX_POINTS, message=request.args.get("saved") and "Saved.")  # fmt: skip


def _progress(answers: list[grades.Answer]) -> tuple[int, int]:
    return sum(a.grade is not None for a in answers), len(answers)


@bp.post("/settings")
def settings(launch_id: str):
    """Release (students see their written answers' points and comments), anonymous grading, points."""
    link = _link(launch_id)
    check_csrf(link.launch)
    points = {}
    for question in link.questions:
        raw = request.form.get(f"points-{question.name}")
        if raw is None or question.points_from_assignment:
            continue
        try:
            value = float(raw)
        except ValueError:
            abort(400, f"The points of {question.name} must be a number.")
        if not 0 < value <= MAX_POINTS:
            abort(400, f"The points of {question.name} must be above 0 and at most {MAX_POINTS:g}.")
        points[question.name] = value
    save(services(), link.key, written_released="released" in request.form,
         anonymous_grading="anonymous" in request.form, written_points=points)  # fmt: skip
    if points:
        _resend(link, sorted({a.user_id for q in link.questions for a in link.answers(q)}))
    return redirect(url_for("written.overview", launch_id=launch_id, saved=1), 303)


@bp.get("/<question>")
def question_page(launch_id: str, question: str):
    """One question: its prompt, its rubric (to edit), and every student's answer with where its grade stands."""
    link = _link(launch_id)
    return _question_page(link, link.question(question))


def _question_page(link: Link, asked: Question, error: str | None = None) -> str:
    return render_template(
        "written_question.html", link=link, question=asked, answers=link.answers(asked),
        prompt=prompt_html(asked.prompt), items=_items(link, asked), csrf_token=csrf_token(link.launch), error=error,
        max_text=MAX_RUBRIC_TEXT,
    )  # fmt: skip


def _items(link: Link, question: Question) -> list:
    return [item for item in link.book.items.values() if item.question == question.name and not item.removed]


@bp.post("/<question>/rubric")
def add_item(launch_id: str, question: str):
    link = _link(launch_id)
    check_csrf(link.launch)
    try:
        rubric.add(services(), link.key, link.question(question), request.form.get("points", ""),
                   request.form.get("text", ""))  # fmt: skip
    except rubric.RubricRefused as refused:
        return _question_error(link, question, str(refused))
    return redirect(_back(launch_id, question), 303)


@bp.post("/<question>/rubric/<int:item_id>")
def change_item(launch_id: str, question: str, item_id: int):
    """Change an item's points or text, or remove it: every grade that applied it changes, and is sent again."""
    link = _link(launch_id)
    check_csrf(link.launch)
    try:
        if request.form.get("action") == "remove":
            affected = rubric.remove(services(), link.key, item_id)
        else:
            affected = rubric.change(services(), link.key, item_id, request.form.get("points", ""),
                                     request.form.get("text", ""))  # fmt: skip
    except rubric.RubricRefused as refused:
        return _question_error(link, question, str(refused))
    _resend(link, affected)
    return redirect(_back(launch_id, question), 303)


def _back(launch_id: str, question: str) -> str:
    return url_for("written.question_page", launch_id=launch_id, question=question) + "#rubric"


def _question_error(link: Link, question: str, message: str):
    return _question_page(link, link.question(question), message), 400


@bp.get("/<question>/<ref>")
def answer_page(launch_id: str, question: str, ref: str):
    link = _link(launch_id)
    return _answer_page(link, link.question(question), ref)


def _answer_page(link: Link, question: Question, ref: str, conflict=None, error: str | None = None, mine=None):
    found = link.answers(question)
    position = next((i for i, a in enumerate(found) if a.ref == ref), None)
    if position is None:
        abort(404, "There is no answer of that student to grade here (yet).")
    answer = found[position]
    shown = conflict.current if conflict else answer.grade
    page = render_template(
        "written_answer.html", link=link, question=question, answer=answer, label=link.label(answer, position),
        position=position, count=len(found), html=_answer_html(answer, question, link.questions),
        items=_items(link, question),
        grade=shown, score=link.book.score(shown, question) if shown else None, mine=mine, conflict=conflict,
        previous=found[position - 1].ref if position else None,
        next=found[position + 1].ref if position + 1 < len(found) else None,
        next_ungraded=_next_ungraded(found, position), csrf_token=csrf_token(link.launch), error=error,
        max_comment=grades.MAX_COMMENT,
    )  # fmt: skip
    return page, 409 if conflict else 400 if error else 200


def _next_ungraded(found: list[grades.Answer], position: int) -> str | None:
    """The next answer nobody graded, after this one (and round again from the first)."""
    later = found[position + 1 :] + found[:position]
    return next((a.ref for a in later if a.grade is None), None)


def _answer_html(answer: grades.Answer, question: Question, questions: list[Question]) -> str:
    """The student's answer as they left it (sanitised HTML: nothing of it runs in the grader's browser)."""
    with services().db.session() as session:
        notebook = session.get(Attempt, answer.attempt.id).notebook
    return notebook_answer_html(notebook, question.name, as_written(questions))


@bp.post("/<question>/<ref>")
def grade(launch_id: str, question: str, ref: str):
    """Save a grade over the revision the grader saw; then go to the next ungraded answer (or stay)."""
    link = _link(launch_id)
    check_csrf(link.launch)
    asked = link.question(question)
    found = {a.ref: a for a in link.answers(asked)}
    answer = found.get(ref) or abort(404)
    form = request.form
    try:
        marks = grades.checked_marks(link.book, asked, form.getlist("item"), form.get("adjustment", ""),
                                     form.get("comment", ""))  # fmt: skip
        seen = _revision(form.get("revision", "0"))
        if answer.digest != form.get("digest"):
            raise grades.GradeRefused(
                "The student submitted a new answer since you opened this one; it is shown now: grade it again."
            )
        grades.save(services(), link.key, answer, asked, marks, seen, link.launch.user_name or link.launch.user_id)
    except grades.GradeRefused as refused:
        return _answer_page(link, asked, ref, error=str(refused))
    except grades.Conflict as conflict:
        return _answer_page(_link(launch_id), asked, ref, conflict=conflict, mine=marks)
    _resend(link, [answer.user_id])
    target = _after_save(link, asked, ref, form.get("then", "next"))
    return redirect(target, 303)


def _revision(text: str) -> int:
    """The revision a grading form was made from (a garbled one is refused in the grader's words)."""
    if not text.isascii() or not text.isdigit() or len(text) > 10:
        raise grades.GradeRefused(grades.STALE_FORM)
    return int(text)


def _after_save(link: Link, question: Question, ref: str, then: str) -> str:
    found = link.answers(question)  # this answer counts as graded now
    position = next((i for i, a in enumerate(found) if a.ref == ref), 0)
    following = _next_ungraded(found, position) if then == "next" else ref
    if following is None:
        return url_for("written.question_page", launch_id=link.launch.id, question=question.name, done=1)
    return url_for("written.answer_page", launch_id=link.launch.id, question=question.name, ref=following)


@bp.post("/grades.csv")
def written_csv(launch_id: str):
    """Per student and question, the autograded and the written parts of the counting attempt (scores.csv keeps
    its columns; this is the by-question export)."""
    link = _link(launch_id)
    check_csrf(link.launch)
    rows = []
    for user_attempts in grades.graded_attempts(services(), link.key).values():
        attempt = grades.with_digests(services(), counting_attempt(user_attempts, link.policy), link.questions)
        name = attempt.user_name or attempt.user_id
        for q in (attempt.result or {}).get("questions", []):
            rows.append([attempt.user_id, name, attempt.number, q["name"], "autograded", q["score"], q["max_score"],
                         "", ""])  # fmt: skip
        for question in link.questions:
            grade = link.book.grade(attempt.user_id, question, (attempt.answer_digests or {}).get(question.name, ""))
            items = [link.book.items[i].text for i in (grade.items if grade else []) if i in link.book.items]
            rows.append([attempt.user_id, name, attempt.number, question.name, "written",
                         link.book.score(grade, question) if grade else None, question.points, " | ".join(items),
                         grade.comment if grade else ""])  # fmt: skip
    rows.sort(key=lambda row: (row[1].lower(), row[0]))
    return csv_download(f"grades-by-question-{link.launch.resource_link_id[:40]}.csv", WRITTEN_COLUMNS, rows)
