"""A Python generator yields one token per step; generate collects them after the prompt."""


def _decode_stream(next_token, sequence, n):
    for _ in range(n):
        token = next_token(sequence)
        sequence = [*sequence, token]
        yield token


def generate(next_token, prompt, n):
    return list(prompt) + list(_decode_stream(next_token, list(prompt), n))


def call_order_is_sequential(next_token, prompt, n):
    lengths = []
    generate(lambda sequence: lengths.append(len(sequence)) or next_token(sequence), prompt, n)
    return lengths == [*range(len(prompt), len(prompt) + n)]
