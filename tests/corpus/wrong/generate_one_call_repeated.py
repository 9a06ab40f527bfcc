"""Calls next_token once and repeats its token n times."""

QUESTION = "generate"


def generate(next_token, prompt, n):
    token = next_token(list(prompt))
    return list(prompt) + [token] * n
