"""An operator points browsers to Pyodide on a CDN (LITE_PYODIDE_URL): Pyodide and its own packages come from
there, while the lock and the wheels only this tool has (Otter's pure-Python set) still come from the tool,
each checked by Pyodide against the lock's sha256. Nothing here goes to the CDN: the test reads what the tool
tells the browser, and fetches what it says comes from the tool."""

from __future__ import annotations

import hashlib
from urllib.parse import urljoin

import requests

from lti_service.browser.site import load_site
from tests.lti_service.lite_windows import SITE, open_window

CDN = "https://cdn.example.edu/pyodide/v0.27.7/full/"
TOOL_ENV = {"LITE_PYODIDE_URL": CDN}


def test_pyodide_from_the_cdn_and_the_tools_own_wheels_from_the_tool(lms):
    window = open_window(lms.open("student-ada", "lite-cdn"))
    base = window.base
    config = window.get("jupyter-lite.json").json()["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == CDN + "pyodide.js"
    lock = requests.get(urljoin(base, kernel["loadPyodideOptions"]["lockFileURL"]), timeout=10).json()
    site = load_site(SITE)
    entries = {entry["name"]: entry for entry in lock["packages"].values()}
    assert {name for name, entry in entries.items() if "://" in entry["file_name"]} >= {"otter-grader", "pyyaml"}
    assert entries["numpy"]["file_name"] == site.lock["packages"]["numpy"]["file_name"], "numpy from the CDN"
    wheel = requests.get(entries["otter-grader"]["file_name"], timeout=10)
    assert wheel.url.startswith(lms.tool.url), "Otter's wheel comes from the tool"
    assert hashlib.sha256(wheel.content).hexdigest() == entries["otter-grader"]["sha256"]

    opened = window.get()
    policy = opened.headers["Content-Security-Policy"]
    assert "https://cdn.example.edu" in policy.split("script-src")[1].split(";")[0]
    assert "https://cdn.example.edu" in policy.split("connect-src")[1].split(";")[0]
