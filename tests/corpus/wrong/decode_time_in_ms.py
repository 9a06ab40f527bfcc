"""Returns milliseconds instead of seconds."""

QUESTION = "decode_time"


def decode_time(n_tokens, param_bytes, bandwidth):
    return n_tokens * param_bytes / bandwidth * 1000
