"""What course staff set for a link and its students, the rules every other part reads: the link's settings
(settings.py: score policy, attempt limit, late work, its due date), a student's accommodations and the
course's late days (accommodations.py), the opaque references that stand for a student where staff chose
to hide names (refs.py), and the link's students as its course platform lists them (roster.py)."""
