"""Library objects a test receives are real instances of the library's classes, rebuilt from data only
(issue 19): a datascience Table and Row, and a library's own class or function named by a reference.

The datascience cases run in the environment the parity corpus's `towns` lab installs (datascience 0.18.1),
decoding messages as a hostile sandbox could write them."""

from __future__ import annotations

import collections
import decimal
import io
import json
import subprocess
import zipfile

import numpy as np
import pytest

from autograder.environment import prepare, requirements_of
from autograder.inside.codec import Blobs, Decoder
from autograder.values import _trusted_global
from tests.autograder.conftest import Refs

DATASCIENCE = "datascience==0.18.1"


@pytest.mark.parametrize(
    ("name", "grader_own"),
    [
        (["numpy", "mean"], np.mean),
        (["numpy", "ndarray"], np.ndarray),
        (["collections", "OrderedDict"], __import__("collections").OrderedDict),
        (["numpy", "random.seed"], None),  # numpy's generator stays the student's
        (["numpy.random", "seed"], None),
        (["os", "system"], None),  # not a trusted package
        (["numpy", "ndarray.__init__"], None),  # nothing private
        (["numpy", "linalg.norm"], None),  # a qualified name never goes through another module
        (["numpy", "pi"], None),  # data is data, not a class or function
        (["builtins", "str"], str),  # `type(answer) == str`
        (["builtins", "ValueError"], ValueError),
        (["builtins", "eval"], None),  # builtin classes only
        (["builtins", "open"], None),
        (["builtins", "__import__"], None),
        ("numpy.mean", None),
    ],
)
def test_a_reference_to_a_library_class_or_function_is_the_graders_own_only_where_trusted(name, grader_own):
    assert _trusted_global(name) is grader_own


def as_the_grader_decodes(node):
    """A node from the sandbox, decoded with the grader's rule for library classes (trusted packages)."""
    return Decoder(memoryview(b""), lambda n: "a reference", lambda n: n, on_class=_trusted_global).value(node)


class Tagged(collections.Counter):
    pass


def test_a_library_subclass_of_a_data_type_is_rebuilt_as_its_own_class():
    counts = as_the_grader_decodes(Refs().encode(collections.Counter("mississippi"), Blobs()))
    assert type(counts) is collections.Counter and counts.most_common(1) == [("i", 4)]
    parts = as_the_grader_decodes(Refs().encode(decimal.Decimal("3.14").as_tuple(), Blobs()))
    assert type(parts).__name__ == "DecimalTuple" and parts.exponent == -2  # a library's named tuple
    flagged = collections.OrderedDict(a=1)
    flagged.note = "state beyond the data"
    assert type(as_the_grader_decodes(Refs().encode(flagged, Blobs()))) is dict


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (["os", "environ.__class__"], {"a": 1}),  # not a trusted package
        (["tests.autograder.test_library_values", "Tagged"], {"a": 1}),  # a class of the student's own files
        (["collections", "Counter"], [1, 2]),  # a class that is not a subclass of what the data is
        (["collections", "defaultdict"], {"a": 1}),  # not built from its data alone: the data stays data
        (["numpy", "mean"], [1, 2]),  # not a class
    ],
)
def test_a_claimed_library_class_that_does_not_fit_leaves_the_plain_data(name, value):
    node = {"$sub": {"global": name, "value": Refs().encode(value, Blobs())}}
    decoded = as_the_grader_decodes(node)
    assert type(decoded) is type(value) and decoded == value


DECODE = """
import json, sys
from autograder.inside.codec import Blobs, Decoder, Encoder, Malformed
from datascience import Table, make_array
from datascience.formats import PercentFormatter


class Refs(Encoder):
    def ref(self, x):
        return {"$ref": 0, "type": type(x).__name__, "module": "", "kind": "object", "truth": True}


def decode(node, blob=b"", max_nodes=10_000):
    return Decoder(memoryview(blob), lambda n: "a reference", lambda n: n, max_nodes=max_nodes).value(node)


def round_trip(x):
    blobs = Blobs()
    node = Refs().encode(x, blobs)
    return decode(node, b"".join(bytes(p) for p in blobs.parts))


report = {}
table = Table().with_columns("name", make_array("a", "b"), "share", make_array(0.1, 0.25))
table.set_format("share", PercentFormatter)
back = round_trip(table)
report["table"] = [type(back) is Table, list(back.labels), str(back)]
row = round_trip(table.row(1))
report["row"] = [isinstance(row, Table.Row), row.item("name"), row.share, repr(row)]
selected = round_trip(table.select(make_array("share")))  # NumPy's str as its label
report["numpy labels"] = [type(selected) is Table, list(selected.labels), type(round_trip(selected.row(0))).__name__]
table.note = "set by the student"
report["attribute"] = round_trip(table)
report["subclass"] = round_trip(type("Mine", (Table,), {})())

column = {"$nd": {"dtype": "<f8", "shape": [2], "data": {"$b": [0, 16]}}}
big = {"$nd": {"dtype": "<f8", "shape": [1 << 17], "data": {"$b": [0, 1 << 20]}}}  # each counts (64 MiB budget)
hostile = {
    "a format that is not a formatter": {"formats": [["x", "Table", {}]]},
    "a setting in place of a method": {"formats": [["x", "PercentFormatter", {"format_column": 1}]]},
    "a private setting": {"formats": [["x", "PercentFormatter", {"__class__": 1}]]},
    "too many settings": {"formats": [["x", "PercentFormatter", {f"s{i}": i for i in range(17)}]]},
    "a setting that is not a scalar": {"formats": [["x", "PercentFormatter", {"decimals": [1]}]]},
    "a format of no column": {"formats": [["y", "PercentFormatter", {}]]},
    "labels twice": {"labels": ["x", "x"], "columns": [column, column]},
    "a label that is not text": {"labels": [1], "columns": [column]},
    "fewer columns than labels": {"labels": ["x", "y"], "columns": [column]},
    "a column that is not an array": {"columns": [[1, 2]]},
    "a column of two dimensions": {"columns": [{"$nd": {"dtype": "<f8", "shape": [1, 2], "data": {"$b": [0, 16]}}}]},
    "one blob as a hundred columns": {"labels": [f"c{i}" for i in range(100)], "columns": [big] * 100},
}
for name, change in hostile.items():
    body = {"labels": ["x"], "columns": [column], "formats": [], **change}
    try:
        decode({"$dstable": body}, bytes(1 << 20), max_nodes=5_000)
        report[name] = "decoded"
    except Malformed as e:
        report[name] = "refused"
for name, body in {"a row longer than its labels": {"labels": ["x"], "values": [1, 2]},
                   "a row with labels twice": {"labels": ["x", "x"], "values": [1, 2]}}.items():
    try:
        decode({"$dsrow": body})
        report[name] = "decoded"
    except Malformed:
        report[name] = "refused"
print(json.dumps(report, default=str))
"""


@pytest.fixture(scope="module")
def datascience_python() -> str:
    """The interpreter of the environment an assignment requiring datascience gets (built once, cached)."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("requirements.txt", DATASCIENCE + "\n")
    return prepare(requirements_of(archive.getvalue())).python


def test_tables_and_rows_are_rebuilt_as_the_librarys_own_and_hostile_ones_are_refused(datascience_python, tmp_path):
    run = subprocess.run([datascience_python, "-c", DECODE], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    is_table, labels, printed = report.pop("table")
    assert is_table and labels == ["name", "share"] and "25.00%" in printed  # its format kept
    assert report.pop("row") == [True, "b", 0.25, "Row(name='b', share=0.25)"]
    assert report.pop("numpy labels") == [True, ["share"], "Row"]
    assert report.pop("attribute") == report.pop("subclass") == "a reference"  # what is not plain stays there
    assert report == dict.fromkeys(report, "refused") and len(report) == 14
