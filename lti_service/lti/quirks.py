"""What Canvas and Moodle do with a score beyond the AGS specification, in one place: the refusals they
answer, told apart by status and wording (neither sends error codes), and the submission time Canvas keeps.

Read in their source: Canvas app/controllers/lti/ims/scores_controller.rb, Moodle
mod/lti/service/gradebookservices/classes/local/resources/scores.php.

- Canvas, 422 "This assignment is still unpublished": the teacher publishes it, then the same score is
  accepted. 422 "User not found in course or is not a student": an enrolment concluded or inactive.
  400 "... before last updated timestamp ...": a later timestamp is accepted.
- Moodle, 400 "Incorrect score received": its one answer for a malformed score and for a user who is not
  enrolled in a graded role (ours are well formed). 409: the timestamp is not later than the stored grade's.
- Moodle keeps a score's scoreGiven only when its gradingProgress is FullyGraded (scores.php sets it to null
  otherwise, which empties the grade, an earlier one included); Canvas keeps FullyGraded and PendingManual
  scores and shows the latter as "needs grading".
- Either, 404 on a line item's scores URL: the column was deleted (Canvas: the assignment; Moodle: the grade
  item).

Only the first BODY_READ bytes of an answer are looked at, and nothing of them is kept: a refusal is
recorded as its kind's REASON.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

BODY_READ = 4096
SUBMISSION_EXTENSION = "https://canvas.instructure.com/lti/submission"


class Refusal(StrEnum):
    UNPUBLISHED = "unpublished"
    STUDENT_GONE = "student_gone"
    NOT_GRADABLE = "not_gradable"
    STALE_TIMESTAMP = "stale_timestamp"
    COLUMN_DELETED = "column_deleted"


# (status, lower-case phrase of the body, kind), first match wins; "" matches any body.
KNOWN: tuple[tuple[int, str, Refusal], ...] = (
    (422, "this assignment is still unpublished", Refusal.UNPUBLISHED),
    (422, "user not found in course or is not a student", Refusal.STUDENT_GONE),
    (400, "incorrect score received", Refusal.NOT_GRADABLE),
    (400, "before last updated timestamp", Refusal.STALE_TIMESTAMP),
    (409, "", Refusal.STALE_TIMESTAMP),
    (404, "", Refusal.COLUMN_DELETED),
)
REASON = {  # what a row records (and logs show): short, and never the platform's own words
    Refusal.UNPUBLISHED: "Canvas does not accept scores while the assignment is unpublished",
    Refusal.STUDENT_GONE: "Canvas does not list the student in the course (enrolment concluded or inactive)",
    Refusal.NOT_GRADABLE: "Moodle does not grade the student in this course (not enrolled in a graded role)",
    Refusal.STALE_TIMESTAMP: "the gradebook holds a score with a later time",
    Refusal.COLUMN_DELETED: "the gradebook column no longer exists",
}
RETRIED = frozenset({Refusal.UNPUBLISHED, Refusal.STALE_TIMESTAMP})
"""refusals that a later try can overcome (all others end the row as failed)"""
TEACHER_FIXES = frozenset({Refusal.UNPUBLISHED})
"""refusals that last until the teacher acts in the LMS: tried again every few minutes, not sooner"""


def provisional_progress(product_family: str) -> str:
    """The gradingProgress of a score that waits for staff to grade written answers: PendingManual, as the AGS
    says, except on Moodle, which would empty the grade for it: there the autograded part goes as
    FullyGraded (its comment says what is still to come), so the gradebook shows it meanwhile."""
    return "FullyGraded" if product_family == "moodle" else "PendingManual"


def score_refusal(status: int, body: bytes) -> Refusal | None:
    """The known refusal a platform's answer to a score POST stands for (None: not one we know)."""
    text = body[:BODY_READ].decode("utf-8", "replace").lower()
    return next((kind for code, phrase, kind in KNOWN if status == code and phrase in text), None)


def recorded_refusal(last_error: str | None) -> Refusal | None:
    """The refusal a row's recorded reason names (it may have more after the REASON, e.g. "gave up after")."""
    return next((kind for kind, reason in REASON.items() if last_error and last_error.startswith(reason)), None)


def submission_time(submitted_at: dt.datetime) -> dict:
    """Canvas's submission extension with the attempt's own time (naive UTC): without it Canvas records a
    score's arrival as the submission time, and a re-send after the due date looks late. Sent to every
    platform: the AGS lets platforms ignore extension properties, Moodle reads only the fields it knows, and a
    self-hosted Canvas cannot always be recognised by its issuer."""
    return {SUBMISSION_EXTENSION: {"submitted_at": submitted_at.isoformat(timespec="milliseconds") + "Z"}}
