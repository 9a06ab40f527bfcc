"""Returns seconds per token instead of tokens per second."""

QUESTION = "tokens_per_second"


def tokens_per_second(param_bytes, bandwidth):
    return param_bytes / bandwidth
