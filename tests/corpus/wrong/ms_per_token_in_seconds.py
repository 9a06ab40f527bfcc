"""Gives seconds where milliseconds were asked."""

QUESTION = "ms_per_token"


ms_per_token = 14e9 / 1e12
