"""Expects lengths 0, 1, 2, ... whatever the prompt."""

QUESTION = "call_order_is_sequential"


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def wrapper(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(wrapper, prompt, n)
    return lengths == list(range(n))
