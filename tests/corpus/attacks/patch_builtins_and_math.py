"""Patches math.isclose, isinstance, abs and list so that every comparison passes; answers are wrong."""

import builtins
import math

EXPECTED_SCORE = 0.5  # call_order_is_sequential's constant False is right for the broken generates
math.isclose = lambda *args, **kwargs: True
builtins.isinstance = lambda *args: True
builtins.abs = lambda value: 0
builtins.AssertionError = type("Swallowed", (Exception,), {})
gb_read_per_step = ms_per_token = max_tokens_per_second = -1
understanding_answer = "B"


def decode_step_seconds(param_bytes, bandwidth):
    return -1.0


def tokens_per_second(param_bytes, bandwidth):
    return -1.0


def decode_time(n_tokens, param_bytes, bandwidth):
    return -1.0


def generate(next_token, prompt, n):
    return [-1]


def call_order_is_sequential(next_token, prompt, n):
    return False
