"""A pool of uids for sandboxes: one per live sandbox, across every grading process on the machine."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

LOCK_DIR = Path("/run/decode-grader-uids") if os.access("/run", os.W_OK) else Path("/tmp/decode-grader-uids")
POOL_SIZE = 64


class UidPool:
    """A uid is held by an exclusive lock on its own lock file, so two grading processes never share one
    (one sandbox's processes could otherwise signal another's).

    Uids are tried round-robin: a killed sandbox's processes may take a moment to be reaped, so the uid it
    released is the last one reused.
    """

    def __init__(self, size: int = POOL_SIZE, lock_dir: Path = LOCK_DIR) -> None:
        self._size, self._lock_dir = size, lock_dir
        self._held: dict[int, int] = {}  # uid -> fd of its lock file
        self._next = 0
        self._lock = threading.Lock()

    def acquire(self, base: int) -> int | None:
        """A free uid, or None when all are taken."""
        self._lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._lock:
            for step in range(self._size):
                offset = (self._next + step) % self._size
                uid = base + offset
                if uid in self._held:
                    continue
                fd = os.open(self._lock_dir / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                self._held[uid], self._next = fd, offset + 1
                return uid
        return None

    def release(self, uid: int) -> None:
        with self._lock:
            fd = self._held.pop(uid, None)
        if fd is not None:
            os.close(fd)  # closing the file drops the lock
