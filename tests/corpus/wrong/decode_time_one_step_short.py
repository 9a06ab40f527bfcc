"""Off by one: n_tokens - 1 steps."""

QUESTION = "decode_time"


def decode_time(n_tokens, param_bytes, bandwidth):
    return (n_tokens - 1) * param_bytes / bandwidth
