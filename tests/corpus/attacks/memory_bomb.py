"""Allocates memory until something gives."""

EXPECTED_SCORE = 16
hoard = []
while True:
    hoard.append(bytearray(64 * 1024 * 1024))
