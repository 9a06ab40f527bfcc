"""Explicit loops: decode_time sums step times, generate uses while, the check walks with enumerate."""


def decode_time(n_tokens, param_bytes, bandwidth):
    total = 0.0
    for _ in range(n_tokens):
        total += decode_step_seconds(param_bytes, bandwidth)
    return total


def generate(next_token, prompt, n):
    sequence = [token for token in prompt]
    produced = 0
    while produced < n:
        sequence.append(next_token(sequence))
        produced += 1
    return sequence


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def watch(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(watch, prompt, n)
    if len(lengths) != n:
        return False
    for i, length in enumerate(lengths):
        if length != len(prompt) + i:
            return False
    return True
