"""Rounds the total to hundredths of a second."""

QUESTION = "decode_time"


def decode_time(n_tokens, param_bytes, bandwidth):
    return round(n_tokens * param_bytes / bandwidth, 2)
