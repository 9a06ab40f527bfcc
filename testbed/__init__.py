"""What the tests and the benchmarks share: the tool and the local LMS started on loopback, classrooms of students,
private PostgreSQL/Redis, stock `otter run`, submissions from the corpus, Chromium settings.

Below the tests (tests/ and bench/ import it; it imports nothing of tests/, tests/test_layout.py says so). It
reads the corpus's files where they live, in tests/corpus/ and tests/parity/assignments/."""
