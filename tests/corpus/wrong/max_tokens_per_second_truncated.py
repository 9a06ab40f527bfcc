"""Truncates to a whole number instead of one decimal."""

QUESTION = "max_tokens_per_second"


max_tokens_per_second = 71
