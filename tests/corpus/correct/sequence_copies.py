"""Fresh copies of the sequence at every step (slices and concatenation), never mutating in place."""


def generate(next_token, prompt, n):
    sequence = prompt[:]
    for _ in range(n):
        sequence = sequence + [next_token(sequence[:])]
    return sequence


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def recorder(sequence):
        lengths.append(len(sequence[:]))
        return next_token(sequence.copy())

    generate(recorder, prompt.copy(), n)
    expected = [len(prompt) + i for i in range(n)]
    return lengths == expected
