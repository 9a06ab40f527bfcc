"""NumPy all the way: numpy scalars and a numpy bool come back from the functions."""

import numpy as np

gb_read_per_step = np.float64(7e9) * 2 / 1e9
ms_per_token = np.float64(14e9) / np.float64(1e12) * 1000
max_tokens_per_second = np.round(1 / (np.float64(14e9) / 1e12), 1)


def decode_step_seconds(param_bytes, bandwidth):
    return np.divide(np.float64(param_bytes), np.float64(bandwidth))


def tokens_per_second(param_bytes, bandwidth):
    return np.reciprocal(decode_step_seconds(param_bytes, bandwidth))


def decode_time(n_tokens, param_bytes, bandwidth):
    return np.multiply(np.int64(n_tokens), decode_step_seconds(param_bytes, bandwidth))


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def recording(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(recording, prompt, n)
    return np.array_equal(np.array(lengths, dtype=int), np.arange(len(prompt), len(prompt) + n)) and np.bool_(True)
