"""Insights benchmark: common_mistakes and similar_pairs over a generated class of 1,000 students.

Run with `make bench`. Students write Decode's functions in varied ways (the generator of
testbed/students_code.py), a few hand in a renamed, reordered copy of another's code, and
each has three graded attempts whose results are in the grader's shape. Each analysis runs three times; we
report the median, in seconds (target: a few seconds each, in a background job), and check that the copied
pairs, and no others, are found.
"""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, date, datetime, timedelta

from lti_service.insights.mistakes import Graded, Student, common_mistakes
from lti_service.insights.similarity import similar_pairs
from testbed.students_code import HANDOUT, generated_class, result, returned

STUDENTS = 1_000
COPIES = 5
RUNS = 3
DAYS = [date(2025, 3, 10) + timedelta(days=n) for n in range(7)]
TARGET_S = 10.0


def students(code: dict[str, str]) -> list[Student]:
    """Three attempts each over the week; a share of the class keeps a mistake to the end."""
    rng = random.Random(7)
    wrong = [result({"decode_time": [("decode_time - 1", returned(value))]}) for value in (0.024, 0.016, 0.02000001)]
    found = []
    for n, (user, text) in enumerate(sorted(code.items())):
        history = tuple(
            Graded(user, f"Name {n}", datetime(2025, 3, 10 + 2 * k, rng.randint(0, 23), tzinfo=UTC),
                   rng.choice(wrong) if rng.random() < 0.6 - 0.2 * k else result({}))
            for k in range(3)
        )  # fmt: skip
        found.append(Student(user, f"Name {n}", history[-1], history, {"decode_time": text[:400]}))
    return found


def median_seconds(run) -> tuple[float, object]:
    times, out = [], None
    for _ in range(RUNS):
        started = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), out


def main() -> None:
    code, copied = generated_class(STUDENTS, COPIES, seed=11)
    roster = students(code)
    mistakes_s, mistakes = median_seconds(lambda: common_mistakes(roster, DAYS))
    pairs_s, pairs = median_seconds(lambda: similar_pairs(code, HANDOUT))
    print(f"insights over {STUDENTS} students (median of {RUNS} runs)")
    print(f"  {'analysis':<16}{'seconds':>10}  result")
    print(f"  {'common_mistakes':<16}{mistakes_s:>10.3f}  {len(mistakes)} groups, top {mistakes[0].students} students")
    print(f"  {'similar_pairs':<16}{pairs_s:>10.3f}  {len(pairs)} pairs, {COPIES} copied")
    found = {(p.a, p.b) for p in pairs}
    assert set(copied) <= found, f"copied pairs missed: {set(copied) - found}"
    extra = found - set(copied)
    print(f"  pairs beyond the copies: {len(extra)} {sorted(extra)[:5]}")
    assert not extra, f"pairs listed that nobody copied: {sorted(extra)[:5]}"
    for label, seconds in (("common_mistakes", mistakes_s), ("similar_pairs", pairs_s)):
        print(f"  {label}: {'OK' if seconds < TARGET_S else 'SLOW'} (target < {TARGET_S:.0f} s)")


if __name__ == "__main__":
    main()
