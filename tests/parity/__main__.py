"""Compare one assignment of the parity corpus: `python -m tests.parity NAME [SUBMISSION ...]`.

Prints each notebook's per-question scores from stock `otter run` and from this grader, and exits 1
if any differ. `--refresh` runs the master notebook again in its environment and saves its outputs
(do it after changing a master: OK-format tests take their expected values from those outputs).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from testbed.parity import Case, Corpus, assignment_names, cases, refresh_outputs


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.parity", description=__doc__.split("\n")[0])
    parser.add_argument("assignment", choices=assignment_names())
    parser.add_argument("submissions", nargs="*", help="default: all of the assignment's notebooks")
    parser.add_argument("--refresh", action="store_true", help="re-run the master and save its outputs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="parity-") as scratch:
        if args.refresh:
            refresh_outputs(args.assignment, Path(scratch))
            return 0
        selected = [Case(args.assignment, s) for s in args.submissions] or cases([args.assignment])
        corpus = Corpus(Path(scratch))
        try:
            return _compare(corpus, selected)
        finally:
            corpus.close()


def _compare(corpus: Corpus, selected: list[Case]) -> int:
    futures = {case: corpus.reference(case) for case in selected}
    differ = False
    for case, future in futures.items():
        expected = future.result()
        got, error = corpus.ours(case)
        print(f"\n{case}" + (f"  (this grader's error: {error})" if error else ""))
        print(f"  {'question':<20} {'otter run':>10} {'ours':>10}")
        for question in sorted(expected.scores.keys() | got.scores.keys()):
            want, have = expected.scores.get(question), got.scores.get(question)
            mark = "" if want == have else "   <-- differs"
            print(f"  {question:<20} {_show(want):>10} {_show(have):>10}{mark}")
        differ |= expected.scores != got.scores
    print("\nall notebooks agree" if not differ else "\nsome notebooks differ")
    return 1 if differ else 0


def _show(score: float | None) -> str:
    return "-" if score is None else f"{score:g}"


if __name__ == "__main__":
    sys.exit(main())
