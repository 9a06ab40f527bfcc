"""`python -m lti_service assignment add|list|show|update|remove`: the operator's commands. What they add is
offered to every course; each build is checked (building.py) before anything is stored."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..services import Services
from . import catalog
from .building import BuildError, Built, from_master, from_zip, listed_files, master_config, pack_handout
from .catalog import EVERY_COURSE, OPERATOR, CatalogError, Scope
from .summary import differences, questions_of

SOURCES = ("master notebook", "autograder zip")


def add_parser(sub) -> None:
    """The `assignment` command and its subcommands, on the main parser's subparsers."""
    commands = sub.add_parser("assignment", help="manage the assignments the tool grades").add_subparsers(
        dest="action", required=True
    )
    add = commands.add_parser("add", help="add an assignment for every course (checked before it is stored)")
    _files_options(add)
    update = commands.add_parser("update", help="add a new version of an assignment (links keep theirs)")
    update.add_argument("assignment", help="its name or id (see list)")
    _files_options(update)
    commands.add_parser("list", help="list assignments with their newest versions")
    show = commands.add_parser("show", help="an assignment's versions, questions and tests, and what changed")
    show.add_argument("assignment", help="its name or id")
    remove = commands.add_parser(
        "remove", help="delete an assignment no link uses; retire one that is used (no longer offered)"
    )
    remove.add_argument("assignment", help="its name or id")


def _files_options(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--master", type=Path, help="a master notebook (Otter Assign format); the files its "
                        "ASSIGNMENT CONFIG lists are read from its folder")  # fmt: skip
    source.add_argument("--zip", type=Path, help="an autograder zip made by otter assign (with --student)")
    parser.add_argument("--student", type=Path, help="with --zip: the student notebook, or its folder (dist/student)")
    parser.add_argument("--title", default="", help="for students and the gradebook (default: the notebook's heading)")


def run(services: Services, args: argparse.Namespace) -> int:
    try:
        return ACTIONS[args.action](services, args)
    except (BuildError, CatalogError) as error:
        print(f"nothing was stored: {error}", file=sys.stderr)
        return 1


def _add(services: Services, args: argparse.Namespace) -> int:
    built, source = _build(args, services)
    version = catalog.add(services.db, built, EVERY_COURSE, args.title, source, OPERATOR)
    print(f"added {built.summary.name!r} (id {version.assignment_id}) for every course, version 1:")
    _report(version)
    return 0


def _update(services: Services, args: argparse.Namespace) -> int:
    assignment = catalog.find(services.db, args.assignment)
    built, source = _build(args)
    previous = catalog.latest(services.db, assignment.id)
    version = catalog.add_version(services.db, assignment.id, built, args.title, source, OPERATOR)
    print(f"added version {version.number} of {assignment.name!r} (id {assignment.id}):")
    _report(version)
    print(f"changes from version {previous.number}:")
    for line in differences(questions_of(previous.questions), questions_of(version.questions)) or ["none"]:
        print(f"  {line}")
    links = catalog.link_count(services.db, assignment.id)
    print(f"the {links} links to it stay on their versions until their staff move them (from the link's dashboard)")
    return 0


def _build(args: argparse.Namespace, new_in: Services | None = None) -> tuple[Built, str]:
    """Build and check the files the options name (for a new assignment, `new_in` refuses a taken name first)."""
    try:
        if args.master:
            master = args.master.read_bytes()
            config = master_config(master)
            if new_in is not None:
                catalog.refuse_taken(new_in.db, config["name"], EVERY_COURSE)
            files = _files_beside(args.master, listed_files(config))
            return from_master(args.master.name, master, files, _progress), SOURCES[0]
        if args.student is None:
            raise BuildError("--zip needs --student: the student notebook, or the folder with it and its files")
        student, student_name = _student(args.student)
        return from_zip(args.zip.read_bytes(), student, student_name, _progress), SOURCES[1]
    except OSError as error:
        raise BuildError(f"cannot read {error.filename}: {error.strerror}") from None


def _progress(step: str) -> None:
    print(f"... {step}", file=sys.stderr, flush=True)


def _files_beside(notebook: Path, listed: list[str]) -> dict[str, bytes]:
    """The listed support files (folders with everything in them), from the notebook's folder."""
    folder, files = notebook.resolve().parent, {}
    for name in listed:
        path = folder / name
        if path.is_dir():
            files |= {str(p.relative_to(folder)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
        elif path.is_file():
            files[name] = path.read_bytes()
        else:
            raise BuildError(f"the ASSIGNMENT CONFIG lists {name}, which is not in {folder}")
    return files


def _student(path: Path) -> tuple[bytes, str]:
    """The student notebook or a zip of its folder (with the files it reads), as from_zip takes them."""
    if not path.is_dir():
        return path.read_bytes(), path.name
    files = {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
    notebooks = [name for name in files if name.endswith(".ipynb") and "/" not in name]
    if len(notebooks) != 1:
        raise BuildError(f"{path} must hold exactly one notebook (.ipynb), the student's")
    return pack_handout(notebooks[0], files)


def _report(version) -> None:
    print(f"  title {version.title!r}, {version.points:g} points; students download {version.handout_name}")
    print(f"  {'question':<28} {'points':>6} {'public':>6} {'hidden':>6}")
    for q in version.questions:
        print(f"  {q['name']:<28} {q['points']:>6g} {q['public']:>6} {q['hidden']:>6}")
    public, hidden = (sum(q[kind] for q in version.questions) for kind in ("public", "hidden"))
    print(f"  {'total':<28} {version.points:>6g} {public:>6} {hidden:>6}")
    print(f"  packages: {version.requirements or 'none beyond the grader'}; environment: {version.environment}")


def _list(services: Services, args: argparse.Namespace) -> int:
    for assignment, version in catalog.listing(services.db):
        scope = Scope(assignment.platform_id, assignment.context_id).describe()
        retired = "\tretired" if assignment.retired_at else ""
        print(f"{assignment.id}\t{assignment.name}\tversion {version.number}\t{version.points:g} points\t"
              f"{len(version.questions)} questions\t{scope}\t{version.title}{retired}")  # fmt: skip
    return 0


def _show(services: Services, args: argparse.Namespace) -> int:
    assignment = catalog.find(services.db, args.assignment)
    scope = Scope(assignment.platform_id, assignment.context_id).describe()
    retired = ", retired (no longer offered)" if assignment.retired_at else ""
    links = catalog.link_count(services.db, assignment.id)
    print(f"{assignment.name!r} (id {assignment.id}), for {scope}{retired}; {links} links use it")
    previous = None
    for version in catalog.versions(services.db, assignment.id):
        print(f"version {version.number}, added {version.created_at:%Y-%m-%d %H:%M} UTC by {version.created_by} "
              f"from {version.source}:")  # fmt: skip
        _report(version)
        if previous is not None:
            changes = differences(questions_of(previous.questions), questions_of(version.questions))
            print(f"  changes from version {previous.number}: {'; '.join(changes) or 'none'}")
        previous = version
    return 0


def _remove(services: Services, args: argparse.Namespace) -> int:
    print(catalog.remove(services.db, catalog.find(services.db, args.assignment).id))
    return 0


ACTIONS = {"add": _add, "update": _update, "list": _list, "show": _show, "remove": _remove}
