"""Every import points down (issues 22 and 42): read from the source, not run.

The floors of lti_service/, lowest first: the grader (autograder/), the infrastructure (configuration,
tables, keys, leases), the LTI protocol (lti/, which could be lifted out as a library), the platforms' registry,
the service container; then the domain, one package a floor where one uses another: what staff set for a link
and its students (rules/) beside the notebook in the browser (browser/), the assignments and the version each
link uses (assignments/), written answers (written/), the gradebook (gradebook/), insights (insights/),
students' submissions and their grading (submissions/); then what drives it: the worker (jobs), operations
(monitoring, backups), the web views, and the app factory with the command line. A module imports only from
its own floor or below; lti/ only from itself and the infrastructure. Every package and top-level module is
on a floor: a new one must be placed. No two modules of lti_service/ or autograder/ import each other,
however indirectly, and no two packages either (imports inside functions and under TYPE_CHECKING count: a
cycle hidden there is still a cycle for a reader); autograder/ never imports lti_service/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = "lti_service"  # the app factory: the package's own __init__, on the top floor
PRODUCT = ("lti_service", "autograder", "lti_dev_platform", "bench", "lite", "assignment", "testbed")
FLOORS = [
    ("autograder",),  # the grader, a package of its own beneath the tool
    (
        "lti_service.config",
        "lti_service.db",
        "lti_service.keys",
        "lti_service.leases",
        "lti_service.logs",
        "lti_service.migrate",
    ),
    ("lti_service.lti",),
    ("lti_service.platforms",),
    ("lti_service.services",),
    ("lti_service.rules", "lti_service.browser"),
    ("lti_service.assignments",),
    ("lti_service.written",),
    ("lti_service.gradebook",),
    ("lti_service.insights",),
    ("lti_service.submissions",),
    ("lti_service.jobs",),
    ("lti_service.monitoring", "lti_service.backup"),
    ("lti_service.views",),
    (APP, "lti_service.cli", "lti_service.__main__"),
]


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules("lti_service") | modules("autograder")


def imports(name: str) -> set[str]:
    """The project modules `name` imports (a `from package import module` counts as the module)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            found.update(f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: imports(name) for name in MODULES}


def floor(name: str) -> int:
    """The floor of a module of lti_service: the one of its package or top-level module (the app factory,
    lti_service itself, only by its own name)."""
    matches = [level for level, prefixes in enumerate(FLOORS) for prefix in prefixes
               if name == prefix or (prefix != APP and name.startswith(prefix + "."))]  # fmt: skip
    assert matches, f"{name} is on no floor: add its package to FLOORS"
    return matches[0]


def package(name: str) -> str:
    """The package (or top-level module) of lti_service a module belongs to; autograder is one."""
    parts = name.split(".")
    return parts[0] if parts[0] != APP or len(parts) == 1 else ".".join(parts[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the other packages its modules import."""
    found: dict[str, set[str]] = {}
    for name, targets in graph.items():
        found.setdefault(package(name), set()).update(package(t) for t in targets if package(t) != package(name))
    return found


PACKAGES = package_graph(GRAPH)


def test_every_import_of_lti_service_points_down():
    upward = [
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        if name.startswith("lti_service")
        for target in targets
        if floor(target) > floor(name)
    ]
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(sorted(upward))


def test_the_lti_package_imports_nothing_of_the_domain():
    allowed = FLOORS[1]  # the infrastructure
    outside = [
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        if name.startswith("lti_service.lti")
        for target in targets
        if not target.startswith("lti_service.lti") and target not in allowed
    ]
    assert not outside, "\n".join(sorted(outside))


def test_the_grader_never_imports_the_web_tool():
    assert not [f"{n} -> {t}" for n, ts in GRAPH.items() if n.startswith("autograder") for t in ts if "lti" in t]


def test_no_module_imports_itself_through_others():
    cycles = strongly_connected(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def test_no_package_imports_itself_through_others():
    """The same between packages: links -> gradebook -> written -> links was a cycle no module showed."""
    cycles = strongly_connected(PACKAGES)
    assert not cycles, "package cycles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def test_every_package_is_on_a_floor_and_every_floor_is_a_package():
    placed = {prefix for prefixes in FLOORS for prefix in prefixes}
    assert set(PACKAGES) <= placed, f"not on any floor: {sorted(set(PACKAGES) - placed)}"
    assert placed <= set(PACKAGES), f"on a floor but gone: {sorted(placed - set(PACKAGES))}"


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Groups of two or more modules that import each other, however indirectly (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = {stack.pop()}
            while node not in group:
                group.add(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for node in graph:
        if node not in index:
            visit(node)
    return groups


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [{"a", "b"}]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [{"a", "b", "c"}]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert strongly_connected(graph) == expected


def test_the_floors_are_read_from_the_source():
    """The checks above would pass on an empty graph: they see the imports they are about."""
    assert "lti_service.rules.settings" in GRAPH["lti_service.gradebook.columns"]
    assert "lti_service.lti.ags" in GRAPH["lti_service.gradebook.passback"]
    assert "lti_service.written" in PACKAGES["lti_service.gradebook"]
    assert floor("lti_service.views.staff") > floor("lti_service.gradebook.columns") > floor("lti_service.lti.ags")
    assert floor("lti_service") == len(FLOORS) - 1 and floor("lti_service.views") < floor("lti_service")


def test_no_product_code_imports_the_tests():
    found = []
    for folder in PRODUCT:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names += [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                found += [f"{path.relative_to(ROOT)} -> {n}" for n in names if n == "tests" or n.startswith("tests.")]
    assert not found, "\n".join(found)


def test_no_test_module_is_imported_by_another_module():
    """What tests share lives in support modules (conftest, helpers): a test module is a leaf."""
    found = []
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if module.startswith("tests.") and module.rpartition(".")[2].startswith("test_"):
                found.append(f"{path.relative_to(ROOT)} -> {module}")
    assert not found, "\n".join(found)
