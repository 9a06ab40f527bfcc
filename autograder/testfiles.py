"""Otter's test files (OK-format doctests and exception-based tests), loaded and run on the grader's side.

The test files are staff code and run here, never in the sandbox. They are parsed and scored with
Otter's own classes (point resolution, all_or_nothing) from `otter.test_files.abstract_test` and
`exception_test`, loaded on their own: importing the `otter` package would run its __init__, which
imports nbconvert and pandas (0.7 s of the CLI's start). Where Otter's code changes process-wide state
(doctest output swaps sys.stdout), the equivalent here is made safe for several gradings in threads.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import importlib.util
import io
import pathlib
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from textwrap import dedent
from typing import Any


def _otter_test_files() -> types.ModuleType:
    """Otter's `otter.test_files` directory as a package of our own (no otter __init__ runs)."""
    name = "autograder._otter_test_files"
    if name not in sys.modules:
        spec = importlib.util.find_spec("otter")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("otter-grader is not installed")
        directory = pathlib.Path(next(iter(spec.submodule_search_locations))) / "test_files"
        package = types.ModuleType(name)
        package.__path__ = [str(directory)]
        sys.modules[name] = package
        exception_test = importlib.import_module(f"{name}.exception_test")
        package.test_case = exception_test.test_case
    return sys.modules[name]


_PACKAGE = _otter_test_files()
_abstract = importlib.import_module(f"{_PACKAGE.__name__}.abstract_test")
_exception = importlib.import_module(f"{_PACKAGE.__name__}.exception_test")
TestCase, TestCaseResult, TestFile = _abstract.TestCase, _abstract.TestCaseResult, _abstract.TestFile
ExceptionTestFile, test_case = _exception.ExceptionTestFile, _exception.test_case
OK_FORMAT_VARNAME = "OK_FORMAT"


class TestFileError(ValueError):
    """A test file Otter would not run either; str() says which and why."""


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """`from otter.test_files import test_case` in a test file gets Otter's class without importing otter."""
    if level == 0 and name in ("otter", "otter.test_files"):
        return _PACKAGE if name == "otter.test_files" and fromlist else types.SimpleNamespace(test_files=_PACKAGE)
    return builtins.__import__(name, globals, locals, fromlist, level)


_TEST_BUILTINS = {**vars(builtins), "__import__": _import}


@dataclass(frozen=True)
class TestSource:
    """One test file of the zip, compiled once; `load()` gives fresh test-file objects for one grading
    (Otter re-reads a test file at every check, so module-level state never carries over)."""

    path: str
    source: str

    @functools.cached_property
    def code(self) -> types.CodeType:
        return compile(self.source, self.path, "exec")

    def load(self) -> TestFile:
        env = {"__builtins__": _TEST_BUILTINS, "__name__": pathlib.PurePath(self.path).stem}
        try:
            exec(self.code, env)
        except Exception as e:
            raise TestFileError(f"test file {self.path} raised {type(e).__name__}: {e}") from None
        if OK_FORMAT_VARNAME not in env:
            raise TestFileError(f"test file {self.path} does not define the global variable 'OK_FORMAT'")
        try:
            return _ok_test_file(env, self.path) if env[OK_FORMAT_VARNAME] else _exception_test_file(env, self)
        except (AssertionError, KeyError, TypeError, ValueError) as e:
            raise TestFileError(
                f"test file {self.path} is not a valid Otter test file ({type(e).__name__}: {e})"
            ) from None


def _exception_test_file(env: dict[str, Any], test: TestSource) -> TestFile:
    """As Otter's ExceptionTestFile._from_compiled_code, on a namespace already executed."""
    if "name" not in env:
        raise TestFileError(f"Test file {test.path} does not define 'name'")
    name, cases = env["name"], []
    for value in env.values():
        if isinstance(value, test_case):
            if value.name is None:
                value.name = f"{name} - {len(cases) + 1}"
            cases.append(value.to_dataclass())
    cases = ExceptionTestFile.resolve_test_file_points(env.get("points", None), cases)
    path = pathlib.PurePath(test.path).as_posix()
    tf = ExceptionTestFile(name, path, cases, all_or_nothing=env.get("all_or_nothing", False))
    tf.source = test.source
    return tf


class OKTestFile(TestFile):
    """An OK-format (doctest) test file, parsed as Otter's OKTestFile.from_spec parses it."""

    @classmethod
    def from_spec(cls, spec: dict[str, Any], path: str) -> OKTestFile:
        assert "name" in spec
        assert len(spec["suites"]) == 1
        suite = spec["suites"][0]
        assert suite.get("type", "doctest") == "doctest"
        assert not bool(suite.get("setup"))
        assert not bool(suite.get("teardown"))
        cases = [
            TestCase(
                name=case.get("name", f"{spec['name']} - {i + 1}"),
                body=dedent(case["code"]),
                hidden=case.get("hidden", True),
                points=case.get("points", None),
                success_message=case.get("success_message", None),
                failure_message=case.get("failure_message", None),
            )
            for i, case in enumerate(suite["cases"])
        ]
        cases = cls.resolve_test_file_points(spec.get("points", None), cases)
        return cls(spec["name"], pathlib.PurePath(path).as_posix(), cases, spec.get("all_or_nothing", False))

    @classmethod
    def from_file(cls, path: str) -> OKTestFile:
        raise NotImplementedError("test files are read from the autograder zip")

    @classmethod
    def from_metadata(cls, s: Any, path: str) -> OKTestFile:
        raise NotImplementedError("test files are read from the autograder zip")

    def run(self, global_environment: dict[str, Any]) -> None:
        raise NotImplementedError("use run_test_file, which runs doctests safely in threads")


def _ok_test_file(env: dict[str, Any], path: str) -> TestFile:
    return OKTestFile.from_spec(env["test"], path)


# -- running -------------------------------------------------------------------------------------


def run_case(tf: TestFile, case: TestCase, env: Any, namespace: Callable[[], dict[str, Any]]) -> TestCaseResult:
    """One test case as Otter runs it: an exception test's function with the student's globals, or a
    doctest in the student's global namespace (printed output compared as text)."""
    if isinstance(tf, OKTestFile):
        passed, output = run_doctest(f"{tf.name} {tf.test_cases.index(case)}", case.body, namespace())
        message = "✅ Test case passed" if passed else "❌ Test case failed\n" + output
        return TestCaseResult(test_case=case, message=message, passed=passed)
    try:
        case.body.call_func(env)
    except Exception as e:
        return TestCaseResult(test_case=case, message="❌ Test case failed\n" + _error_message(tf, e), passed=False)
    return TestCaseResult(test_case=case, message="✅ Test case passed", passed=True)


def _error_message(tf: TestFile, e: Exception) -> str:
    try:
        return tf._generate_error_message(e)
    except Exception:  # the traceback did not reach the test function (the sandbox died first)
        return f"Error in test {tf.name}:\n{type(e).__name__}: {e}"


def run_doctest(name: str, doctest_string: str, global_environment: dict[str, Any]) -> tuple[bool, str]:
    """Otter's run_doctest, with the examples' output captured per thread (doctest swaps sys.stdout)."""
    import doctest  # only OK-format tests need it (it imports unittest and pdb: 30 ms of the CLI's start)

    examples = doctest.DocTestParser().parse(doctest_string, name)
    test = doctest.DocTest(
        [e for e in examples if isinstance(e, doctest.Example)], global_environment, name, None, None, doctest_string
    )
    test.globs = global_environment  # DocTest made a plain-dict copy; a fresh namespace per case is the copy
    runner = doctest.DocTestRunner(verbose=True)
    report = io.StringIO()
    with _OUTPUT.capturing() as output:
        runner._fakeout = output
        runner.run(test, out=report.write, clear_globs=False)
    return (True, "") if runner.failures == 0 else (False, report.getvalue())


class _ThreadOutput(io.TextIOBase):
    """sys.stdout while doctests run: each thread's writes go to its own capture (doctest's `_fakeout`),
    other threads' to the stream it replaced. doctest assigns sys.stdout = _fakeout and restores it; with
    this one object as every runner's _fakeout, those swaps are harmless across threads."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.original: Any = sys.stdout

    @contextmanager
    def capturing(self) -> Iterator[_ThreadOutput]:
        with self._lock:
            if sys.stdout is not self:
                self.original, sys.stdout = sys.stdout, self
        self._local.buffer = io.StringIO()
        try:
            yield self
        finally:
            self._local.buffer = None

    def _target(self) -> Any:
        return getattr(self._local, "buffer", None) or self.original

    def write(self, s: str) -> int:
        return self._target().write(s)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self._target().flush()

    def getvalue(self) -> str:
        return self._target().getvalue()

    def truncate(self, size: int | None = None) -> int:
        buffer = self._target()
        buffer.seek(size or 0)
        return buffer.truncate(size)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


_OUTPUT = _ThreadOutput()


def _between(low: int, high: int) -> Callable[[Any], int | None]:
    return lambda v: int(min(max(v, low), high)) if type(v) in (int, float) and v == v else None


def _one_of(*allowed: Any) -> Callable[[Any], Any]:
    return lambda v: v if type(v) in (str, bool) and v in allowed else None


PRINT_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "threshold": _between(0, 1000),  # numpy's defaults at most: the student's choice cannot make printing
    "edgeitems": _between(0, 3),  # cost more than numpy's own (summarising a long axis to 2*edgeitems)
    "precision": _between(0, 32),
    "linewidth": _between(1, 100_000),
    "suppress": _one_of(True, False),
    "nanstr": lambda v: v if type(v) is str and len(v) <= 16 else None,
    "infstr": lambda v: v if type(v) is str and len(v) <= 16 else None,
    "sign": _one_of("-", "+", " "),
    "floatmode": _one_of("fixed", "unique", "maxprec", "maxprec_equal"),
    "legacy": _one_of("1.13", "1.21", "1.25", "2.1", "2.2", False),  # datascience sets '1.13'
}
"""The student's numpy print options that apply here, each bounded (None: not applied)."""


@contextmanager
def printoptions(options: Any) -> Iterator[None]:
    """numpy's print options of the student's process, for doctests that print arrays here (a library
    import such as datascience changes them, and Otter compares the printed text). Thread-safe: numpy
    keeps print options in a context variable.

    Bounded (PRINT_OPTIONS): a student's threshold=sys.maxsize would make the grader print a 150,000-float
    answer in full (67 s). What stays is what numpy's defaults cost: an array of many short axes (2 to 6
    long) is printed in full whatever the options, so its printing is bounded only by its size, which the
    message limits (64 MB), and by the time limits of the process running the tests."""
    if not isinstance(options, dict) or not options:
        yield
        return
    numpy = importlib.import_module("numpy")
    bounded = {k: check(options.get(k)) for k, check in PRINT_OPTIONS.items()}
    chosen = {k: v for k, v in bounded.items() if v is not None}
    try:
        context = numpy.printoptions(**chosen)
        context.__enter__()
    except (TypeError, ValueError):
        yield
        return
    try:
        yield
    finally:
        context.__exit__(None, None, None)
