"""The command `make run` uses: it prints the registration values and serves the index page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]


def test_serve_prints_values_and_serves_the_index() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lti_dev_platform", "serve", "--host", "127.0.0.2", "--port", "0", "--test-hooks"],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:  # the last line names the index page; the socket is listening by then
            lines.append(line)
            if line.startswith("Open "):
                break
        text = "".join(lines)
        assert "Client ID:             decode-grader-dev" in text
        assert "Deployment ID:         1" in text
        index_url = lines[-1].split()[1]
        issuer = index_url.rstrip("/")
        assert f"Issuer (platform ID):  {issuer}" in text
        assert f"Access token URL:      {issuer}/token" in text
        resp = requests.get(index_url, timeout=10)
        assert resp.status_code == 200
        assert "<h1>LTI dev platform</h1>" in resp.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
