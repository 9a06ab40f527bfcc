"""The cap on common fingerprints (insights/similarity.py COMMON_CAP) over a class large enough that it, not
the class's share, decides: above 400 students, code more than 40 students hand in alike is the class's usual
code, not a hint of copying, while the pairs who copied from each other are still found."""

from __future__ import annotations

import random

from lti_service.insights.similarity import similar_pairs
from testbed.students_code import HANDOUT, generated_class, student_code

POSTED = """

def check_positive(**values):
    for key, value in values.items():
        if not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"{key} must be a positive number, got {value!r}")
    return values
"""
"""a helper of a solution passed around the class: code nobody else writes"""


def test_code_more_than_the_cap_of_students_share_pairs_none_of_them():
    """45 of 465 students hand in the same solution: under the class's share (46.5) but over the cap (40)."""
    code, copied = generated_class(420, 3, seed=17)
    posted = student_code(random.Random(18)) + POSTED
    code |= {f"posted-{n:03d}": posted for n in range(45)}
    assert [(p.a, p.b) for p in similar_pairs(code, HANDOUT)] == copied
