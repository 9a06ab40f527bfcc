"""What a confined Python (the student sandbox's runner, a grading process) sets up before anything else:
its resource limits and the packages it sees."""

import os
import resource
import sys

from .wire import loads


def limit_resources(memory, cpu_seconds, processes, file_size):
    """Per-process caps besides the cgroup's: address space, CPU time, processes of the uid, file size, open
    files, no core dumps."""
    for kind, value in (
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_CPU, cpu_seconds),
        (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_FSIZE, file_size),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(kind, (value, value))


def add_site_dirs(directories):
    """The environment's packages. The interpreter starts without `site` (-S) so that the grader's own
    editable-install hook (a .pth file importing a path finder) is not run at every start."""
    import site

    for directory in directories:
        sys.path.append(directory)
        for name in sorted(os.listdir(directory)):
            if name.endswith(".pth") and not name.startswith("__editable__"):
                site.addpackage(directory, name, set())


def start(fd_count):
    """Read what the grader put on the command line (python_argv in sandbox/bwrap.py): `fd_count` inherited
    descriptors, the four rlimits, the site dirs. Sets them up; the descriptors."""
    numbers = [int(arg) for arg in sys.argv[1 : fd_count + 5]]
    add_site_dirs(loads(sys.argv[fd_count + 5].encode()))
    limit_resources(*numbers[fd_count:])
    return numbers[:fd_count]
