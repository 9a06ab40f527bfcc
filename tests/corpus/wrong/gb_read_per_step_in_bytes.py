"""Counts bytes instead of gigabytes."""

QUESTION = "gb_read_per_step"


gb_read_per_step = 7e9 * 2
