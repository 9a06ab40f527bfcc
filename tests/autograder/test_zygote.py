"""What a grading process forked by a zygote gets of its own (autograder/zygote.py)."""

from __future__ import annotations

import json
import subprocess
import sys

OWN_TMP = """
import json, os, sys
from autograder.zygote import own_tmp

package, other = sys.argv[1:3]
own_tmp(1 << 20, [package])
report = {"read": open(os.path.join(package, "mod.py")).read(), "other": os.path.exists(other),
          "tmp": sorted(os.listdir("/tmp"))}
try:
    open(os.path.join(package, "new.py"), "w").close()
    report["write"] = "written"
except OSError as e:
    report["write"] = e.strerror
print(json.dumps(report))
"""


def test_its_own_tmp_still_shows_a_virtualenv_kept_under_tmp(tmp_path):
    """A checkout or virtualenv under /tmp (a CI machine's may be) is bound into the grader's boxes there:
    the empty /tmp a forked grading process takes shows it again, read-only, and nothing else of /tmp."""
    package = tmp_path / "venv" / "site-packages"
    package.mkdir(parents=True)
    (package / "mod.py").write_text("x = 1\n")
    (tmp_path / "another-grading.txt").write_text("left behind")
    command = [sys.executable, "-c", OWN_TMP, str(package), str(tmp_path / "another-grading.txt")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)  # its own mount namespace
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["read"] == "x = 1\n" and report["write"] == "Read-only file system"
    assert not report["other"] and report["tmp"] == [str(package).split("/")[2]]
    assert (tmp_path / "another-grading.txt").exists()  # this process's /tmp untouched
