"""One grading in a process of its own, for an assignment whose tests need more than this process has:
its support files in the working directory (tests read them by relative path, as under `otter run`)
or packages of its own environment.

grading.grade_submission starts `python -m autograder.child ZIP OPTIONS` with the environment's
interpreter, in a temporary directory holding the support files, with the notebook on stdin. This
prints the staff view of the result as one JSON line (or the reason the sandbox is unavailable).
Both processes are the grader's own: nothing here comes from the sandbox.
"""

from __future__ import annotations

import json
import sys

from .assignment import load_assignment
from .grading import grade_cells
from .notebook import load_cells
from .options import GradeOptions
from .sandbox import SandboxUnavailable


def main() -> int:
    zip_path, options = sys.argv[1], GradeOptions(**json.loads(sys.argv[2]))
    assignment = load_assignment(zip_path)
    cells = load_cells(sys.stdin.buffer.read(), assignment.name, options.max_notebook_bytes)
    try:
        result = grade_cells(assignment, cells, options)
    except SandboxUnavailable as e:
        print(json.dumps({"sandbox_unavailable": str(e)}))
        return 0
    print(json.dumps(result.to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
