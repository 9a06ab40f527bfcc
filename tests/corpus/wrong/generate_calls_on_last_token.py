"""Calls next_token on the last token only."""

QUESTION = "generate"


def generate(next_token, prompt, n):
    sequence = list(prompt)
    for _ in range(n):
        sequence.append(next_token(sequence[-1:]))
    return sequence
