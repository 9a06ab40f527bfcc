# Two commands matter (see README): `make run` and `make test`. Both install what they need.
SHELL := /bin/bash
VENV ?= .venv
# The interpreter .venv is made from: Debian's own Python 3.11 where there is one. It is built with PGO and
# LTO; pyenv's default build is not, and runs the grader, the sandbox and the tool 10-30% slower (measured
# in the soak burst). An existing .venv keeps its interpreter (`rm -rf .venv` to change it).
PYTHON ?= $(firstword $(wildcard /usr/bin/python3.11) python3)
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
AUTOGRADER_ZIP := dist/autograder/decode-autograder.zip

.PHONY: run test test-wheels assignment lite lint format system-deps bench soak bytecode

run: $(INSTALLED) system-deps assignment lite bytecode
	@mkdir -p var
	@PY=$(PY) ./run-local.sh

# The suite in TEST_JOBS processes at once (pytest-xdist; a test file to a process, so a module's LMS starts
# once): tests wait on sandboxes, browsers, LMS retries and their workers' polls, so twice the cores keeps
# both busy most of the time (6 kept them busy all the time but finished no sooner, and slowed single steps
# past their limits). Then the tests that assert how long something takes (marked `alone`), one at a time.
TEST_JOBS ?= 4

test: $(INSTALLED) system-deps
	@$(MAKE) --no-print-directory --jobs=3 assignment lite lint bytecode test-wheels  # independent: side by side
	$(PY) -m pytest -n $(TEST_JOBS) --dist loadfile -m "not alone"
	$(PY) -m pytest -m alone

# The wheels the tests build assignments' environments from, served on loopback by the tests (no test reaches
# PyPI): downloaded once for this interpreter; the copy of the list in the folder is the stamp.
TEST_WHEELS := build/test-wheels/test-wheels.txt
test-wheels: $(TEST_WHEELS)

$(TEST_WHEELS): tests/test-wheels.txt | $(INSTALLED)
	rm -rf build/test-wheels build/test-wheels.part
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --dest build/test-wheels.part -r $<
	cp $< build/test-wheels.part/ && mv build/test-wheels.part build/test-wheels

assignment: $(AUTOGRADER_ZIP)

$(AUTOGRADER_ZIP): $(INSTALLED) assignment/decode.ipynb assignment/build.py otter_config.json
	$(PY) assignment/build.py

# The JupyterLite site students open their notebook in (build/lite/site/): Pyodide, its wheels and Otter's,
# each checked against a pinned hash (lite/pins.json). Fetches into build/lite-cache/ once; the script keeps a
# stamp of its inputs, so when nothing changed it returns at once (phony: make cannot see those inputs).
lite: $(INSTALLED) system-deps
	$(PY) lite/build.py

lint: $(INSTALLED)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(INSTALLED)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# Python packages live in .venv; reinstalled when pyproject.toml changes. The checkout is put on the path
# by a plain .pth line (editable_mode=compat: no import hook to load at every start). uv installs them: the
# versions pip resolves, with their bytecode (PYTHONDONTWRITEBYTECODE may be set), in 12 s rather than pip's
# 33 s from a warm cache. pip stays, upgraded, for the grader's environment builds.
$(INSTALLED): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || (rm -rf $(VENV) && python3 -m venv $(VENV))
	$(PY) -m pip install --quiet "uv>=0.9,<1"
	$(VENV)/bin/uv pip install --quiet --python $(PY) --upgrade-package pip pip -e ".[dev]" \
		--config-settings editable_mode=compat --compile-bytecode
	@touch $@

# Bytecode for our own packages, as pip writes it for installed ones (PYTHONDONTWRITEBYTECODE may be set):
# a command-line grading starts without compiling the grader first. Sources are checked, so never stale.
bytecode: $(INSTALLED)
	@$(PY) -m compileall -q autograder lti_service lti_dev_platform

# System tools from Debian (we run as root on the target machines): the sandbox, the browser the
# end-to-end tests drive, and npm, which fetches Pyodide for `make lite`.
system-deps:
	@if ! command -v bwrap >/dev/null || ! test -x /usr/bin/chromium; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap chromium; fi
	@command -v npm >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm)

# Speed, not part of `make test` (a few minutes): stock `otter run` against our grader side by side,
# then the LTI tool's launch handling and upload-to-score latency, and the notebook in the browser.
bench: $(INSTALLED) system-deps assignment lite bytecode
	PYTHONPATH=. $(PY) bench/bench_grader.py
	PYTHONPATH=. $(PY) bench/bench_lti.py
	PYTHONPATH=. $(PY) bench/bench_lite.py
	PYTHONPATH=. $(PY) bench/bench_insights.py

# Faults under load, not part of `make test` (about 30 minutes; SOAK_OUTAGE=60 shortens the LMS outages):
# a class at a deadline, one fault per scenario, and a table of what the platform's gradebook received.
soak: $(INSTALLED) system-deps assignment bytecode
	@if ! command -v redis-server >/dev/null || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server postgresql; fi
	PYTHONPATH=. $(PY) bench/soak.py
