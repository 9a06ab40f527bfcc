"""Rearranged formulas: multiply by the reciprocal, divide the other way round."""

gb_read_per_step = 7e9 * 2 / 1e9
ms_per_token = gb_read_per_step * 1e9 / 1e12 * 1000
max_tokens_per_second = round(1000 / ms_per_token, 1)


def decode_step_seconds(param_bytes, bandwidth):
    return param_bytes * (1 / bandwidth)


def tokens_per_second(param_bytes, bandwidth):
    return bandwidth / param_bytes


def decode_time(n_tokens, param_bytes, bandwidth):
    return n_tokens * param_bytes / bandwidth
