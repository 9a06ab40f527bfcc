"""Written answers course staff grade by hand (Otter's `manual: true` questions): rubrics, grades, and the
written part of a student's score."""
