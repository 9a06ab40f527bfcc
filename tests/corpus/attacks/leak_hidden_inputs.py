"""Records every prompt its generate is given, and raises them in the public test of a later question.

Under a grader that runs a question's hidden tests at its check, in the process that goes on to run the
next public tests, the hidden prompts would reach the student's view in that error message.
"""

EXPECTED_SCORE = 16
seen_prompts = []


def generate(next_token, prompt, n):
    seen_prompts.append(list(prompt))
    sequence = list(prompt)
    for _ in range(n):
        sequence.append(next_token(sequence))
    return sequence


def call_order_is_sequential(next_token, prompt, n):
    if list(prompt) == [1, 2, 3] and n == 4:  # the public test's own call
        unknown = [p for p in seen_prompts if p not in ([7, 7], [1, 2, 3])]
        if unknown:
            raise ValueError(f"inputs of hidden tests: {unknown}")
    lengths = []

    def recording(sequence):
        lengths.append(len(sequence))
        return next_token(sequence)

    generate(recording, prompt, n)
    return lengths == list(range(len(prompt), len(prompt) + n))
