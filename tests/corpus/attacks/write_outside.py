"""Writes into the grader's own folders and system folders."""

import os
import sys

EXPECTED_SCORE = 16
targets = [os.path.dirname(sys.executable), sys.prefix, "/etc", "/usr", "/root", "/work", "/var/tmp", os.getcwd() + "/.."]
for folder in targets:
    try:
        with open(os.path.join(folder, "written-by-student.txt"), "w") as handle:
            handle.write("owned")
        print("wrote into", folder)
    except OSError as error:
        print("refused:", folder, error)
