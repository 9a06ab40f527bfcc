"""Believes the second token can be known first."""

QUESTION = "understanding_answer"


understanding_answer = "B"
