"""Decode, the assignment this repository builds (`make assignment`), present on every install: the migration
that made assignments data stores the build's outputs (AUTOGRADER_ZIP and STUDENT_NOTEBOOK, titled
ASSIGNMENT_TITLE) as its version 1, offered to every course, and pins every link made before to it. Its
written question's rubric comes from the master notebook (MASTER_NOTEBOOK)."""

from __future__ import annotations

from dataclasses import replace

from autograder.written import WrittenQuestion

from ..config import Config
from .building import Built, from_zip, written_questions

SOURCE = "built in (make assignment)"


def decode_built(config: Config) -> Built:
    """The build's outputs, read and checked like any autograder zip with its student notebook."""
    missing = [str(path) for path in (config.autograder_zip, config.student_notebook) if not path.is_file()]
    if missing:
        raise RuntimeError(
            f"the built-in assignment's files are missing ({', '.join(missing)}): run `make assignment` first "
            "(or set AUTOGRADER_ZIP and STUDENT_NOTEBOOK)"
        )
    notebook = config.student_notebook
    built = from_zip(config.autograder_zip.read_bytes(), notebook.read_bytes(), notebook.name, lambda step: None)
    return replace(built, written=decode_written(config))


def decode_written(config: Config) -> tuple[WrittenQuestion, ...]:
    """Decode's written questions, with their rubric from the master notebook (migration 0010 adds them to the
    version 0006 stored)."""
    master = config.master_notebook.read_bytes() if config.master_notebook.is_file() else None
    return written_questions(master, config.student_notebook.read_bytes())
