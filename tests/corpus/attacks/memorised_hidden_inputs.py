"""Hard-codes the answers for the inputs the hidden tests used when those inputs were fixed.

A student who learnt them (from how long grading took, with a function that sleeps in proportion to
its arguments) could pass every test without solving anything: the right answer for the known inputs
(the public tests' and the old hidden tests'), None for any other. Hidden tests now draw their inputs
at every grading, so it keeps only the public tests' points.
"""

from itertools import product

EXPECTED_SCORE = 6.5  # Part 1 and the understanding question (4), each Part 2 question's public test (0.5)

GRID = list(product((0.5, 7e8, 8.1e11, 1.8e12), (0.25, 9e11, 3.35e12)))
STEPS = [(8e9, 2e12), (3, 2), (13.214e9, 4.8e12), (2, 10), (10, 2), *GRID]
RUNS = [(5, 8e9, 2e12), (0, 14e9, 1e12), (1, 14e9, 1e12), (2, 13.214e9, 4.8e12), (37, 13.214e9, 4.8e12),
        (300, 13.214e9, 4.8e12), (250, 1.8e12, 3.35e12), (7, 0.5, 0.25)]  # fmt: skip
STEP_SECONDS = {(size, rate): size / rate for size, rate in STEPS}
RUN_SECONDS = {(n, size, rate): n * size / rate for n, size, rate in RUNS}
GENERATIONS = {((7, 7), 3), ((4, 8, 15), 5), ((1, 2), 6), ((3, 1, 4), 4), ((5, 6, 7), 0), ((), 4), ((9,), 150)}
CHECKS = {((1, 2, 3), 4), ((3, 1), 5), ((9, 9, 9, 9), 3), ((), 3), ((2,), 3), ((1, 2), 4), ((5, 6, 7), 3),
          ((4, 2), 0), ((4, 2), 3)}  # fmt: skip


def decode_step_seconds(param_bytes, bandwidth):
    return STEP_SECONDS.get((param_bytes, bandwidth))


def tokens_per_second(param_bytes, bandwidth):
    step = STEP_SECONDS.get((param_bytes, bandwidth))
    return None if step is None else 1 / step


def decode_time(n_tokens, param_bytes, bandwidth):
    return RUN_SECONDS.get((n_tokens, param_bytes, bandwidth))


def generate(next_token, prompt, n):
    if (tuple(prompt), n) not in GENERATIONS | CHECKS:  # call_order_is_sequential runs it on its inputs
        return None
    sequence = list(prompt)
    for _ in range(n):
        sequence.append(next_token(sequence))
    return sequence


def call_order_is_sequential(next_token, prompt, n):
    if (tuple(prompt), n) not in CHECKS:
        return None
    lengths = []

    def recording(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(recording, prompt, n)
    return lengths == list(range(len(prompt), len(prompt) + n))
