"""Prints 100 MB to stdout, and more straight to file descriptors 1 and 2."""

import os
import sys

EXPECTED_SCORE = 16
line = "x" * 1023 + "\n"
for _ in range(100 * 1024):
    sys.stdout.write(line)
for _ in range(10 * 1024):
    os.write(1, line.encode())
    os.write(2, line.encode())
