"""Decode, the assignment this repository builds (`make assignment`), present on every install: the migration
that made assignments data stores the build's outputs (AUTOGRADER_ZIP and STUDENT_NOTEBOOK, titled
ASSIGNMENT_TITLE) as its version 1, offered to every course, and pins every link made before to it."""

from __future__ import annotations

from ..config import Config
from .building import Built, from_zip

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
    return from_zip(config.autograder_zip.read_bytes(), notebook.read_bytes(), notebook.name, lambda step: None)
