"""Rounds the rate to one decimal inside the function."""

QUESTION = "tokens_per_second"


def tokens_per_second(param_bytes, bandwidth):
    return round(bandwidth / param_bytes, 1)
