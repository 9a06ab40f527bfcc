"""A student's notebook taken as an attempt: checked against the link's assignment, saved once, and queued for
grading. One path for an upload on the assignment page and a submit from the notebook in the browser."""

from __future__ import annotations

from collections.abc import Callable

from autograder import InvalidSubmission, check_submission

from ..assignments import catalog, versions
from ..db import Attempt, Launch
from ..services import Services
from .grading import SubmissionRefused, create_attempt


class NotTaken(Exception):
    """A notebook was not taken as an attempt; str() says why to the student. Nothing was saved."""


def take_notebook(
    services: Services, launch: Launch, filename: str, data: bytes, grade_later: Callable[[int], None]
) -> tuple[Attempt, bool]:
    """Check the notebook, save it as an attempt and hand its id to `grade_later` (the queue). Returns the
    attempt and whether it is new (the same notebook again makes no new attempt)."""
    if launch.message_type != "LtiResourceLinkRequest":
        raise NotTaken("Notebooks are submitted from an assignment's page, not from this one. Nothing was saved.")
    version = versions.version_for(services, launch)
    try:
        check_submission(catalog.zip_path(services, version), data, services.config.max_upload_bytes)
    except InvalidSubmission as error:
        raise NotTaken(
            f"Your file was not accepted: {error} (the assignment here is “{version.title}”). Nothing was saved."
        ) from None
    try:
        attempt, new = create_attempt(services, launch, filename, data)
    except SubmissionRefused as refused:
        raise NotTaken(f"{refused} Nothing was saved.") from None
    if new or attempt.status == "queued":  # a repeated upload of a queued attempt queues it again
        grade_later(attempt.id)  # saved: from here on nothing may fail the request
    return attempt, new
