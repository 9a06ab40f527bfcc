"""generate with functools.reduce; a check that compares consecutive lengths and the start."""

from functools import reduce


def generate(next_token, prompt, n):
    return reduce(lambda sequence, _: sequence + [next_token(sequence)], range(n), list(prompt))


def call_order_is_sequential(next_token, prompt, n):
    lengths = []

    def spy(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(spy, prompt, n)
    starts_right = n == 0 or lengths[0] == len(prompt)
    steps_by_one = all(later - earlier == 1 for earlier, later in zip(lengths, lengths[1:]))
    return len(lengths) == n and starts_right and steps_by_one
