"""Returns the recorded lengths instead of a bool."""

QUESTION = "call_order_is_sequential"


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def wrapper(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(wrapper, prompt, n)
    return lengths
