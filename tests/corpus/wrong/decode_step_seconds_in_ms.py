"""Returns milliseconds instead of seconds."""

QUESTION = "decode_step_seconds"


def decode_step_seconds(param_bytes, bandwidth):
    return param_bytes / bandwidth * 1000
