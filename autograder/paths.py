"""Paths that come from uploads: zip entries, tar members, paths in an ASSIGNMENT CONFIG, support files.

Each is checked by `safe_relative` before it names anything on disk or in an archive, so that no upload can
make the grader (root) or the build write outside the folder it means, or hand students a zip that does so on
their machines. The rules are strict rather than normalising: an Otter autograder zip or a course's folder
never needs `..`, `a//b`, `./a`, backslashes or control characters, and a name refused is clearer than a name
silently changed into another one.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import unicodedata
import zipfile
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import BinaryIO

MAX_PATH_CHARS = 1024
MAX_PART_BYTES = 255  # NAME_MAX of Linux file systems
MAX_DEPTH = 32
COPY_CHUNK = 1 << 20  # bytes of a stream written at a time


def safe_relative(name: str) -> PurePosixPath:
    """`name` as a relative path that stays inside the folder it is put in; ValueError saying why not."""
    if reason := _unsafe(name):
        raise ValueError(f"{shown(name)} {reason}")
    return PurePosixPath(name)


def _unsafe(name: str) -> str | None:
    """Why `name` is not a safe relative path (None if it is)."""
    parts = name.split("/")
    if not name:
        return "is empty"
    if len(name) > MAX_PATH_CHARS:
        return f"is longer than {MAX_PATH_CHARS} characters"
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in name):
        return "has a control character (such as a NUL or a line break) or bytes that are not text"
    if "\\" in name:
        return "has a backslash: separate folders with '/'"
    if name.startswith("/"):
        return "is an absolute path (it starts with '/'): give a path relative to the assignment's folder"
    if ".." in parts:
        return "goes up out of its folder ('..')"
    if "" in parts or "." in parts:
        return "has an empty or '.' part (such as 'a//b', './a' or 'a/')"
    if len(parts) > MAX_DEPTH:
        return f"is more than {MAX_DEPTH} folders deep"
    if any(len(part.encode()) > MAX_PART_BYTES for part in parts):
        return f"has a file or folder name longer than {MAX_PART_BYTES} bytes"
    return None


def shown(name: str) -> str:
    """A name quoted for a message, its unprintable characters escaped (a NUL shows as \\x00)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in name[:200])
    return f"'{text}{'...' if len(name) > 200 else ''}'"


def check_members(members: Iterable[tuple[str, bool]]) -> None:
    """Check an archive's (name, is_folder) members: every name safe, none twice, none both file and folder
    (ValueError naming the first that is not)."""
    files: set[PurePosixPath] = set()
    folders: set[PurePosixPath] = set()
    for name, is_folder in members:
        try:
            path = safe_relative(name)
        except ValueError as error:
            raise ValueError(f"the entry {error}") from None
        if path in files or (path in folders and not is_folder):
            raise ValueError(f"the entry {shown(name)} appears twice")
        (folders if is_folder else files).add(path)
        folders.update(path.parents)
    if clash := files & folders:
        raise ValueError(f"the entry {shown(str(min(clash)))} is both a file and a folder")


def check_zip_members(infos: Iterable[zipfile.ZipInfo]) -> None:
    """Check a zip's entries (check_members), refusing symbolic links too: a zip stays a set of plain files
    and folders wherever it is unpacked (ValueError naming the entry)."""
    members = []
    for info in infos:
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ValueError(f"the entry {shown(info.orig_filename)} is a symbolic link")
        # orig_filename: zipfile cuts `filename` at a NUL, which would hide it
        members.append((info.orig_filename.removesuffix("/"), info.is_dir()))
    check_members(members)


def write_under(
    root: str | os.PathLike[str], name: str, data: bytes | BinaryIO, mode: int = 0o644, dir_mode: int = 0o755
) -> None:
    """Write a new file at `name` (safe_relative) under `root`, making its folders, from bytes or a stream (copied
    in chunks: never whole in memory). Each folder is opened from the one before it without following links, so
    neither the name nor a link or file already under `root` can lead the write anywhere else (ValueError if one
    is in the way)."""
    path = safe_relative(name)
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in path.parts[:-1]:
            inner = _subfolder(folder, part, dir_mode, name)
            os.close(folder)
            folder = inner
        fd = _open_at(folder, path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, name, mode)
    finally:
        os.close(folder)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)  # whatever the umask
        if isinstance(data, bytes):
            f.write(data)
        else:
            shutil.copyfileobj(data, f, COPY_CHUNK)


def _subfolder(parent: int, part: str, mode: int, name: str) -> int:
    """The folder `part` of `parent`, made if missing, as an open fd."""
    try:
        os.mkdir(part, mode, dir_fd=parent)
        made = True
    except FileExistsError:
        made = False
    fd = _open_at(parent, part, os.O_RDONLY | os.O_DIRECTORY, name)
    if made:
        os.fchmod(fd, mode)  # whatever the umask
    return fd


def _open_at(folder: int, part: str, flags: int, name: str, mode: int = 0o777) -> int:
    """os.open of `part` in `folder`, never through a link (ValueError if a link, file or folder is in the way)."""
    try:
        return os.open(part, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
            raise ValueError(f"{shown(name)} cannot be written: a link, file or folder is in its way") from None
        raise
