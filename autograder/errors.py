"""Errors every part of the grader may raise, in a module that imports nothing (a grading process loads it
without the sandbox machinery)."""


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be started; student code is never run without it."""
