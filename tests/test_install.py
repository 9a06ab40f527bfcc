"""What `make` installs into .venv, as every process of the suite and of the tool relies on it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


# Flask is not among them: some process of the suite writes its bytecode, so it passed on a .venv without any.
@pytest.mark.parametrize("module", ["pandas.core.frame", "numpy.linalg", "otter.execute", "autograder.grader"])
def test_installed_packages_carry_their_bytecode(module):
    """PYTHONDONTWRITEBYTECODE is set on these machines, so nothing writes bytecode later: a package installed
    without it is compiled again by every process that imports it (pandas: seconds a time, inside a sandbox's
    cell timeouts; uv installs without bytecode unless asked)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.cached, module
    assert Path(spec.cached).is_file(), f"{module} has no bytecode: {spec.cached}"
