"""Small helpers shared by the functions, with keyword arguments and a tuple-returning generate."""

GIGA = 10**9


def _seconds(num_bytes, bytes_per_second):
    return num_bytes / bytes_per_second


gb_read_per_step = 7 * GIGA * 2 / GIGA
ms_per_token = _seconds(14 * GIGA, 10**12) * 1e3
max_tokens_per_second = float(f"{1 / _seconds(14 * GIGA, 10**12):.1f}")
understanding_answer = "a"


def decode_step_seconds(param_bytes, bandwidth):
    return _seconds(num_bytes=param_bytes, bytes_per_second=bandwidth)


def tokens_per_second(param_bytes, bandwidth):
    step = decode_step_seconds(param_bytes, bandwidth)
    return 1.0 / step


def decode_time(n_tokens, param_bytes, bandwidth):
    return decode_step_seconds(param_bytes, bandwidth) * n_tokens


def _one_step(next_token, sequence):
    return sequence + (next_token(list(sequence)),)


def generate(next_token, prompt, n):
    sequence = tuple(prompt)
    for _ in range(n):
        sequence = _one_step(next_token, sequence)
    return sequence
