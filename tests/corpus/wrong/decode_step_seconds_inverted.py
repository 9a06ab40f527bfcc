"""The ratio upside down."""

QUESTION = "decode_step_seconds"


def decode_step_seconds(param_bytes, bandwidth):
    return bandwidth / param_bytes
