"""Scores on their way to the LMS's gradebook: a link's column (columns.py: the launch's own line item, or one
found or created for it) and the outbox of one row per user and column, sent through AGS and retried by time
(passback.py). The LMS-specific refusals it meets are told apart in lti/quirks.py."""
