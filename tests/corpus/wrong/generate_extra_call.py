"""Calls next_token n + 1 times and drops the extra token."""

QUESTION = "generate"


def generate(next_token, prompt, n):
    sequence = list(prompt)
    for _ in range(n + 1):
        sequence.append(next_token(sequence))
    return sequence[: len(prompt) + n]
