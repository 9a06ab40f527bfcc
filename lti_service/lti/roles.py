"""LTI 1.3 roles in every form a platform may send them, read in one place for launches and rosters.

A context role (someone's role in this course) comes as a full URI
(`http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor`), as a sub-role URI
(`.../membership/Instructor#TeachingAssistant`) or as its short name (`Instructor`, which Moodle's Names
and Role Provisioning Services send). A sub-role is a kind of its principal role and grants nothing more: the
LIS vocabulary has `membership/Learner#Instructor` (a learner who instructs other learners), which is a
Learner, never course staff. Institution and system roles (`.../institution/person#Instructor`,
`.../system/person#Administrator`) say what someone is elsewhere, never what they may do in this course.
Anything not clearly staff is a student.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
# The principal context roles of LTI 1.3 (appendix A.2.3), which may also be sent by their short names.
CONTEXT_ROLES = {
    "Administrator", "ContentDeveloper", "Instructor", "Learner", "Mentor", "Manager", "Member", "Officer",
}  # fmt: skip
STAFF_ROLES = {"Instructor", "Administrator", "ContentDeveloper"}
_FULL = re.compile(re.escape(MEMBERSHIP) + r"#(\w+)\Z")  # membership#Instructor
_SUB = re.compile(re.escape(MEMBERSHIP) + r"/(\w+)#(\w+)\Z")  # membership/Instructor#TeachingAssistant


def context_roles(roles: Iterable[object]) -> set[str]:
    """The principal roles someone has in this course, a sub-role counting as its principal role only:
    ["membership/Instructor#TeachingAssistant", "membership/Learner#Instructor"] -> {"Instructor", "Learner"}.
    Names outside LTI's principal context roles are ignored."""
    names: set[str] = set()
    for role in roles if isinstance(roles, list | tuple | set | frozenset) else ():
        role = str(role).strip()[:300]
        if role in CONTEXT_ROLES:
            names.add(role)
        elif full := _FULL.match(role):
            names.add(full.group(1))
        elif sub := _SUB.match(role):
            names.add(sub.group(1))
    return names & CONTEXT_ROLES


def is_course_staff(roles: Iterable[object]) -> bool:
    """Teaches or helps teach this course (an institution-wide Instructor role is not enough)."""
    return bool(context_roles(roles) & STAFF_ROLES)


def is_learner(roles: Iterable[object]) -> bool:
    """Takes this course as a student."""
    return "Learner" in context_roles(roles)
