"""Fills the only writable place until the disk is full."""

import os

EXPECTED_SCORE = 16
chunk = b"x" * (1024 * 1024)
index = 0
while True:
    with open(f"/tmp/filler-{index}", "wb") as handle:
        for _ in range(64):
            handle.write(chunk)
    index += 1
