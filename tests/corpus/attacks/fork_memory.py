"""Forks children that each hold as much memory as one process may: together far more than the sandbox's."""

import os
import select
import signal

EXPECTED_SCORE = 16
ready_read, ready_write = os.pipe()
children = set()
for _ in range(6):
    pid = os.fork()
    if pid == 0:
        os.close(ready_read)
        hoard = bytearray(200 * 1024 * 1024)  # zero-filled: every page is touched
        os.write(ready_write, b"1")
        signal.pause()
    children.add(pid)
os.close(ready_write)
holding = 0
while children and holding < len(children):  # until each child holds its memory or is gone
    if select.select([ready_read], [], [], 0.05)[0]:
        holding += len(os.read(ready_read, 6))
    children = {pid for pid in children if os.waitpid(pid, os.WNOHANG)[0] == 0}
