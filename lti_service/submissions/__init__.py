"""Students' uploads and their grading: attempts stored once per notebook, leased to one worker at a time
and graded in turns over students (grading.py); regrade and re-send jobs over a link's rows (batches.py)."""
