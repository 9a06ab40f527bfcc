"""Notebooks for the tests of written answers: a real course's (ps88-lab3/) and helpers that make others."""
