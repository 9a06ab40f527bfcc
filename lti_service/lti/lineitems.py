"""What a launch's Assignment and Grade Services claim lets the tool do with its link's scores: the link's
own line item, or the course's line items (to find or create one), or nothing (and why, in words)."""

from __future__ import annotations

from dataclasses import dataclass

from .ags import LINEITEM_SCOPE, SCORE_SCOPE

AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
RESOURCE_LINK_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/resource_link"

# Why scores cannot reach the gradebook: what happened (for everyone), what an administrator can do (for staff).
PROBLEMS = {
    "no_ags": (
        "Your course platform gives this tool no access to its gradebook, so scores are not sent there.",
        "An administrator can turn on Assignment and Grade Services for the tool (Moodle: the tool's "
        '"IMS LTI Assignment and Grade Services" setting; Canvas: the AGS scopes of its developer key).',
    ),
    "no_score_scope": (
        "Your course platform does not let this tool send scores to its gradebook.",
        "An administrator can grant the tool the score scope of Assignment and Grade Services.",
    ),
    "no_column": (
        "This assignment link has no gradebook column, and your course platform does not let the tool create "
        "one, so scores are not sent to the gradebook.",
        'Add the assignment with deep linking (Moodle: "Select content"; Canvas: an assignment with the tool '
        'as submission type), or let an administrator grant column management (Moodle: "Use this service for '
        'grade sync and column management").',
    ),
    "column_pending": (
        "The gradebook column for this assignment could not be created yet; scores are kept here and sent "
        "once it exists.",
        "The tool tries again at a later launch of this link (at most once a minute).",
    ),
}


@dataclass(frozen=True)
class GradebookAccess:
    """What a launch's AGS claim allows for its link's scores."""

    lineitem: str | None = None
    """the link's own line item, named by the launch"""
    lineitems: str | None = None
    """the course's line items, when the tool may find and create them there"""
    problem: str | None = None
    """a PROBLEMS code when scores cannot be sent at all"""


def gradebook_access(claims: dict) -> GradebookAccess:
    ags = claims.get(AGS_CLAIM)
    if not isinstance(ags, dict):
        return GradebookAccess(problem="no_ags")
    scopes = ags.get("scope") if isinstance(ags.get("scope"), list) else []
    if SCORE_SCOPE not in scopes:
        return GradebookAccess(problem="no_score_scope")
    lineitem = ags.get("lineitem") if isinstance(ags.get("lineitem"), str) else None
    lineitems = ags.get("lineitems") if isinstance(ags.get("lineitems"), str) and LINEITEM_SCOPE in scopes else None
    if not lineitem and not lineitems:
        return GradebookAccess(problem="no_column")
    return GradebookAccess(lineitem, lineitems)
