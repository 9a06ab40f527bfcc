"""Says whether generate is an ordinary function instead of checking the order of the calls.

The hidden tests swap generate for broken functions of their own: a grader whose test functions reach
student code as some other type would give this the points for spotting them.
"""

import types

QUESTION = "call_order_is_sequential"


def call_order_is_sequential(next_token, prompt, n):
    return type(generate) is types.FunctionType
