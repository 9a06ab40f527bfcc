"""A course's resource link, in one room: the link's settings for staff (settings.py: score policy, attempt
limit, late work), the assignment version it is pinned to (versions.py), its gradebook column (columns.py:
the launch's own line item, or one found or created for it), and what its staff see (dashboard.py)."""
