"""Always says True without looking."""

QUESTION = "call_order_is_sequential"


def call_order_is_sequential(next_token, prompt, n):
    return True
