"""Lifts the recursion limit and recurses until the C stack overflows."""

import sys

EXPECTED_SCORE = 16
sys.setrecursionlimit(10**7)


def down(depth):
    return down(depth + 1) + 1


down(0)
