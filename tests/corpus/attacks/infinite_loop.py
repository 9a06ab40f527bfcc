"""A cell that never ends."""

EXPECTED_SCORE = 16
while True:
    pass
