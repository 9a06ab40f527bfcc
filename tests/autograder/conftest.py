"""Shared fixtures: the toy assignment built with `otter assign` once per session, and the parity
corpus's pandas assignment for the attack corpus; and what several test files craft: a cell that writes the
sandbox's replies itself, references encoded as the sandbox's side makes them."""

from __future__ import annotations

import copy
import json
import sys
import uuid
from pathlib import Path

import pytest

from autograder.inside.codec import Encoder
from testbed.build_cache import otter_assign
from testbed.parity import AttackTarget, build

FIXTURES = Path(__file__).parent / "fixtures"
OTTER = str(Path(sys.executable).with_name("otter"))

SOLUTION = {
    "q1": "def square(x):\n    return x * x\n",
    "q2": (
        "total = np.arange(5).sum()\n"
        "def apply_twice(f, x):\n    return f(f(x))\n"
        "def double_all(xs):\n    return [apply_twice(lambda v: v * 2, x) // 2 for x in xs]\n"
    ),
}

# The start of a notebook cell that finds the runner's channel and can then write a crafted reply of its own.
FIND_CHANNEL = """
import json, os, struct, sys
frame = sys._getframe()
while frame.f_code.co_name != "serve":
    frame = frame.f_back
channel, request = frame.f_locals["self"], frame.f_locals["msg"]

def reply(ok, blob=b"", **extra):
    data = json.dumps({"re": request["id"], "ok": ok, **extra}).encode()
    os.write(channel.write_fd, struct.pack(">II", len(data), len(blob)) + data + blob)
"""


class Refs(Encoder):
    """The codec's encoder with a reference for every object it does not send as data (as the sandbox's side
    makes them), where the base encoder marks it unsendable."""

    def ref(self, x):
        return {"$ref": id(x), "type": type(x).__name__, "module": "", "kind": "object", "truth": True, "name": None}


class Toy:
    """The built toy assignment plus a helper that writes student notebooks."""

    def __init__(self, zip_path: Path, template: dict, workdir: Path) -> None:
        self.zip, self.template, self.workdir = zip_path, template, workdir

    def notebook(self, name: str, answers: dict[str, str] | None = None, extra=()) -> Path:
        """A student notebook with answer cells replaced and extra code cells appended.

        answers maps question -> source (default: the solution); extra is a list of
        (after_question or None, source) inserted after that question's answer cell or at the end.
        """
        answers = {**SOLUTION, **(answers or {})}
        nb = copy.deepcopy(self.template)
        cells, question = [], 0
        for cell in nb["cells"]:
            if "otter_answer_cell" in cell["metadata"].get("tags", []):
                question += 1
                cell["source"] = answers[f"q{question}"]
                cells.append(cell)
                cells += [_code(src) for after, src in extra if after == f"q{question}"]
            else:
                cells.append(cell)
        cells += [_code(src) for after, src in extra if after is None]
        nb["cells"] = cells
        path = self.workdir / name / "toy.ipynb"  # the name its `otter.Notebook("toy.ipynb")` expects
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(nb))
        return path


def _code(source: str) -> dict:
    return {
        "cell_type": "code",
        "id": uuid.uuid4().hex[:8],
        "metadata": {},
        "source": source,
        "outputs": [],
        "execution_count": None,
    }


@pytest.fixture(scope="session")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Toy:
    dist = otter_assign(FIXTURES, "toy.ipynb") / "source" / "dist"  # built once for every test process
    (zip_path,) = (dist / "autograder").glob("*.zip")
    template = json.loads((dist / "student" / "toy.ipynb").read_text())
    return Toy(zip_path, template, tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session")
def pandas_assignment(tmp_path_factory: pytest.TempPathFactory) -> AttackTarget:
    """The parity corpus's gradebook assignment (pandas, exception-based tests), built, to run the
    attack corpus against: `.zip`, `.full_marks`, `.with_cell(source)` (the solution with one hostile
    cell right after Otter's init cell) and `.attacks()` (its own pandas attacks, each with the score
    its answers honestly deserve)."""
    return AttackTarget(build("gradebook", tmp_path_factory.mktemp("gradebook")))
