"""Reads the grader's environment variables (secrets) and raises with them."""

import os

EXPECTED_SCORE = 16
print(dict(os.environ))
raise RuntimeError("environment: " + repr(dict(os.environ)))
