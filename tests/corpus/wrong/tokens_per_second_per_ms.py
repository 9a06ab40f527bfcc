"""Tokens per millisecond (one over the step time in ms)."""

QUESTION = "tokens_per_second"


def tokens_per_second(param_bytes, bandwidth):
    return 1 / (param_bytes / bandwidth * 1000)
