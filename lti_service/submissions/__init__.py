"""Students' uploads and their grading: a notebook checked, stored once as an attempt and queued
(uploads.py); attempts leased to one worker at a time and graded in turns over students (grading.py); regrade
and re-send jobs over a link's rows (batches.py); moving a link to a newer version of its assignment, every
attempt graded again first and scores sent on staff's confirmation (moves.py)."""
