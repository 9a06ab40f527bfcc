"""Off by one: generates n - 1 tokens."""

QUESTION = "generate"


def generate(next_token, prompt, n):
    sequence = list(prompt)
    for _ in range(n - 1):
        sequence.append(next_token(sequence))
    return sequence
