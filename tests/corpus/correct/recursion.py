"""Recursive decode_time and generate, and a recursive check of the recorded lengths."""


def decode_time(n_tokens, param_bytes, bandwidth):
    if n_tokens == 0:
        return 0.0
    return decode_step_seconds(param_bytes, bandwidth) + decode_time(n_tokens - 1, param_bytes, bandwidth)


def generate(next_token, prompt, n):
    if n == 0:
        return list(prompt)
    return generate(next_token, list(prompt) + [next_token(list(prompt))], n - 1)


def _lengths_from(lengths, start):
    if not lengths:
        return True
    return lengths[0] == start and _lengths_from(lengths[1:], start + 1)


def call_order_is_sequential(next_token, prompt, n):
    seen = []

    def wrapped(sequence):
        seen.append(len(sequence))
        return next_token(sequence)

    generate(wrapped, prompt, n)
    return len(seen) == n and _lengths_from(seen, len(prompt))
