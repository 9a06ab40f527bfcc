"""Inverts milliseconds instead of seconds."""

QUESTION = "max_tokens_per_second"


max_tokens_per_second = 1 / 14
