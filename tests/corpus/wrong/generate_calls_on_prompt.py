"""Calls next_token on the prompt every time."""

QUESTION = "generate"


def generate(next_token, prompt, n):
    sequence = list(prompt)
    for _ in range(n):
        sequence.append(next_token(prompt))
    return sequence
