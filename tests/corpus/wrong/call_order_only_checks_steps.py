"""Checks that lengths grow by one but not where they start or how many there are."""

QUESTION = "call_order_is_sequential"


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def wrapper(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(wrapper, prompt, n)
    return all(b - a == 1 for a, b in zip(lengths, lengths[1:]))
