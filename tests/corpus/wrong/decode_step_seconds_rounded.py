"""Rounds inside the function."""

QUESTION = "decode_step_seconds"


def decode_step_seconds(param_bytes, bandwidth):
    return round(param_bytes / bandwidth, 3)
