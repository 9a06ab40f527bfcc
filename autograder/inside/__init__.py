"""Code that runs INSIDE the sandbox, next to student code (stdlib only; numpy and pandas when present).

It is mounted read-only into the sandbox as the package `_autograder_inside` and never imported by the
trusted side: nothing here is trusted, the grader validates whatever it sends.
"""
