"""Returns only the new tokens, not the prompt followed by them."""

QUESTION = "generate"


def generate(next_token, prompt, n):
    sequence = list(prompt)
    new = []
    for _ in range(n):
        token = next_token(sequence)
        sequence.append(token)
        new.append(token)
    return new
