"""The test suite. Its sandboxes take uids of their own (unless GRADER_SANDBOX_UID is set): the checks for
leftover sandbox processes look at this run's range only, so another grading on the machine (a second test
run, a developer's command) cannot fail them, nor this run's sandboxes theirs. Under pytest-xdist each worker
process takes a range of its own within the run's (the controller's value, inherited, is the run's base), so
one worker's check never sees another's sandboxes, and a sandbox that escaped its parent is still seen by the
check of the worker that started it (a uid is where it runs, whoever its parent now is). The same holds for
the uid environment builds (pip) run as: one per range, outside every range."""

import os

from autograder.sandbox.uids import POOL_SIZE as RANGE  # the uids one grading process's pool takes from

RUN = 16 * RANGE  # a run's share: its own range and 15 workers'
BUILD_UIDS = 2_000_000

worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... in a worker process
os.environ.setdefault("GRADER_SANDBOX_UID", str(70_000 + RUN * (os.getpid() % 1000)))
if worker.startswith("gw"):
    os.environ["GRADER_SANDBOX_UID"] = str(int(os.environ["GRADER_SANDBOX_UID"]) + RANGE * (1 + int(worker[2:]) % 15))
if worker.startswith("gw") or "GRADER_BUILD_UID" not in os.environ:
    os.environ["GRADER_BUILD_UID"] = str(BUILD_UIDS + (int(os.environ["GRADER_SANDBOX_UID"]) - 70_000) // RANGE)
