"""The wrapper records lengths but never calls the real next_token."""

QUESTION = "call_order_is_sequential"


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def wrapper(sequence):
        lengths.append(len(sequence))
        return 0

    generate(wrapper, prompt, n)
    return lengths == list(range(len(prompt), len(prompt) + n))
