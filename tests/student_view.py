"""What a student is shown must not tell how long grading took: a hidden test's inputs can be inferred from
it by a function that sleeps in proportion to its arguments. The student page shows when a notebook was
submitted, to the minute; nothing finer, and no duration, CPU time or moment of grading."""

from __future__ import annotations

import re

TIMING = re.compile(r"time|duration|elapsed|second|cpu|usage|clock|_at$|_ms$", re.IGNORECASE)
FINER_THAN_MINUTES = re.compile(r"\b\d{1,2}:\d{2}:\d{2}")  # a clock time with seconds


def field_names(value) -> set[str]:
    """Every key of a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value).union(*map(field_names, value.values()))
    if isinstance(value, list):
        return set().union(*map(field_names, value))
    return set()


def timing_fields(value) -> set[str]:
    """The keys of a JSON value that name a duration, a CPU time or a moment."""
    return {name for name in field_names(value) if TIMING.search(name)}
