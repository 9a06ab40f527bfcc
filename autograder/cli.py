"""Command line: `python -m autograder grade --autograder ZIP SUB.ipynb ... [--jobs N]`, and
`python -m autograder prepare --autograder ZIP` to install what an assignment needs before grading.

For one notebook, start-up is most of the time: its grading process and sandbox are spawned as soon as the
zip's limits are known, and what only grading needs (the thread pool) is imported afterwards, while their
interpreters start on the other cores."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .assignment import Assignment, AssignmentError, load_assignment
from .errors import SandboxUnavailable
from .options import GradeOptions
from .pool import SpawnedEarly, close_all
from .results import GradeResult

if TYPE_CHECKING:
    from concurrent.futures import Future

EXIT_OK, EXIT_GRADER_ERROR, EXIT_INVALID_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder")
    sub = parser.add_subparsers(dest="command", required=True)
    grade = sub.add_parser("grade", help="grade notebooks, one JSON line per submission")
    grade.add_argument("--autograder", required=True, help="autograder zip from `otter assign`")
    grade.add_argument("submissions", nargs="+")
    grade.add_argument("--jobs", type=int, default=1, help="submissions graded in parallel")
    grade.add_argument("--student-view", action="store_true", help="hide hidden tests' details")
    grade.add_argument("--csv", help="also write scores to this CSV file")
    grade.add_argument("--cell-timeout", type=float, help="seconds a cell may run (default: the assignment's)")
    grade.add_argument("--test-timeout", type=float, help="seconds a test's call may run (default: the assignment's)")
    env = sub.add_parser("prepare", help="install the packages an assignment needs (once per machine)")
    env.add_argument("--autograder", required=True, help="autograder zip from `otter assign`")
    return parser


def _prepare(zip_path: str) -> int:
    """Build (or find) the zip's environment, saying which."""
    import logging

    from .environment import EnvironmentBuildError, prepare, requirements_of

    reports = logging.getLogger("autograder.environment")
    reports.setLevel(logging.INFO)
    reports.addHandler(logging.StreamHandler(sys.stdout))
    try:
        prepare(requirements_of(zip_path), progress=lambda text: print(text, file=sys.stderr))
    except EnvironmentBuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_GRADER_ERROR
    return EXIT_OK


class _Progress:
    """A one-line progress bar on stderr, only when grading several submissions."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.lock = total, 0, threading.Lock()
        self.enabled = total > 1

    def step(self, _: Future[GradeResult]) -> None:
        if not self.enabled:
            return
        with self.lock:
            self.done += 1
            bar = "#" * (30 * self.done // self.total)
            end = "\n" if self.done == self.total else ""
            print(f"\r[{bar:<30}] {self.done}/{self.total}", end=end, file=sys.stderr, flush=True)


def _write_csv(path: str, results: list[GradeResult]) -> None:
    import csv

    questions = list(dict.fromkeys(q.name for r in results for q in r.questions))  # first-seen order
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "score", "max_score", *questions, "error"])
        for r in results:
            scores = {q.name: q.score for q in r.questions}
            row = [r.submission, r.score, r.max_score, *(scores.get(q, 0.0) for q in questions)]
            writer.writerow([*row, r.error or ""])


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "prepare":
        return _prepare(args.autograder)
    batch = len(args.submissions) > 1  # sandboxes started ahead pay off from the second notebook on
    options = GradeOptions(
        cell_timeout=args.cell_timeout, test_timeout=args.test_timeout, prestart=max(1, args.jobs) if batch else 0
    )
    try:
        assignment = load_assignment(args.autograder)
    except AssignmentError as e:
        for path in args.submissions:
            print(json.dumps(_unusable(path, e).to_dict(student_view=args.student_view)), file=sys.stdout)
        print(f"error: {e}", file=sys.stderr)
        return EXIT_GRADER_ERROR
    try:
        limits = options.limits(assignment.limits)
        early = None if batch or assignment.requirements else SpawnedEarly(assignment, limits)
        return _grade_all(args, options, assignment, early)
    except SandboxUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_GRADER_ERROR


def _unusable(path: str, error: AssignmentError) -> GradeResult:
    return GradeResult(path, 0.0, error=f"the autograder zip cannot be used: {error}")


def _grade_all(
    args: argparse.Namespace, options: GradeOptions, assignment: Assignment, early: SpawnedEarly | None
) -> int:
    """Grade the submissions, printing one JSON line each as it is ready; the exit status."""
    from concurrent.futures import ThreadPoolExecutor

    from .box import manifest_of
    from .grader import grade_submission

    out = sys.stdout  # kept: doctests may swap sys.stdout in other threads while results are printed
    progress = _Progress(len(args.submissions))
    results: list[GradeResult] = []
    failed = False
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [
            pool.submit(grade_submission, args.autograder, path, options, early=early) for path in args.submissions
        ]
        for future in futures:
            future.add_done_callback(progress.step)
        try:
            for path, future in zip(args.submissions, futures, strict=True):
                try:
                    result = future.result()
                except SandboxUnavailable:
                    raise
                except AssignmentError as e:  # found by the grading process: a test file that cannot run
                    failed, result = True, _unusable(path, e)
                except Exception as e:  # a grader defect must cost this notebook only, not the batch
                    failed = True
                    error = f"the grader failed on this notebook ({e!r})"[:500]
                    result = GradeResult(path, manifest_of(assignment).points, error=error)
                results.append(result)
                print(json.dumps(result.to_dict(student_view=args.student_view)), file=out, flush=True)
        finally:
            close_all()  # the sandboxes started ahead for a batch
    if args.csv:
        _write_csv(args.csv, results)
    if failed:
        return EXIT_GRADER_ERROR
    return EXIT_INVALID_INPUT if any(r.invalid_input for r in results) else EXIT_OK
