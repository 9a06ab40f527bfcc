"""Scores on their way to the LMS's gradebook: the outbox of one row per user and column, sent through AGS
and retried by time (passback.py). The LMS-specific refusals it meets are told apart in lti/quirks.py."""
