"""Forgets the 2 bytes per parameter."""

QUESTION = "gb_read_per_step"


gb_read_per_step = 7
