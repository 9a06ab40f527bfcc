"""Assignments as data: many notebook assignments per deployment, each in versions, added by operators (CLI)
or by a course's staff (in the browser).

- `summary.py`: what an autograder zip holds (questions, points, public and hidden tests) and how two
  versions differ;
- `confined.py`: running `otter assign` on uploaded files in bubblewrap, like untrusted code;
- `building.py`: a master notebook or an autograder zip (with the student's files) made into checked files;
- `catalog.py`: storing and finding assignments and their versions, scoped to every course or one;
- `builds.py`: uploads from the browser, built by a background job with progress;
- `versions.py`: the version each link is pinned to (at its first launch; moved only by its staff);
- `builtin.py`: Decode, seeded from the build's outputs;
- `cli.py`: `python -m lti_service assignment add|list|show|update|remove`.
"""
