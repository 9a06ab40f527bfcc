"""Insights for course staff: what the class got wrong, and who wrote alike (computed off-request)."""
