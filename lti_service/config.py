"""Settings from environment variables, with defaults that run everything embedded in ./var."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


MULTIPART_OVERHEAD = 64 * 1024
"""bytes an upload's request may carry beyond the file itself (the form's other fields and boundaries)"""


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True)
class Config:
    """Everything an operator can set; each field names its environment variable."""

    data_dir: Path = field(default_factory=lambda: Path(_env("DATA_DIR", str(ROOT / "var"))))
    """DATA_DIR: the SQLite database, the embedded queue, the secret key (default ./var)"""
    database_url: str = field(default_factory=lambda: _env("DATABASE_URL", ""))
    """DATABASE_URL: postgresql://... for scale-out; default sqlite in DATA_DIR"""
    keys_dir_setting: str = field(default_factory=lambda: _env("KEYS_DIR", ""))
    """KEYS_DIR: the tool's private keys, mode 0600 (default DATA_DIR/keys; share it between machines)"""
    queue_url: str = field(default_factory=lambda: _env("QUEUE_URL", ""))
    """QUEUE_URL: redis://... for scale-out; default Huey's SQLite storage in DATA_DIR"""
    autograder_zip: Path = field(
        default_factory=lambda: Path(_env("AUTOGRADER_ZIP", str(ROOT / "dist/autograder/decode-autograder.zip")))
    )
    """AUTOGRADER_ZIP: the built-in assignment's zip from `make assignment`, stored as Decode's version 1"""
    student_notebook: Path = field(
        default_factory=lambda: Path(_env("STUDENT_NOTEBOOK", str(ROOT / "dist/student/decode.ipynb")))
    )
    """STUDENT_NOTEBOOK: the built-in assignment's student notebook, stored with its version 1"""
    master_notebook: Path = field(
        default_factory=lambda: Path(_env("MASTER_NOTEBOOK", str(ROOT / "assignment/decode.ipynb")))
    )
    """MASTER_NOTEBOOK: the built-in assignment's master notebook (its written question's rubric)"""
    assignment_title: str = field(default_factory=lambda: _env("ASSIGNMENT_TITLE", "Decode: one token at a time"))
    """ASSIGNMENT_TITLE: the built-in assignment's title"""
    tool_name: str = field(default_factory=lambda: _env("TOOL_NAME", "Notebook grader"))
    """TOOL_NAME: the deployment's name that LMS administrators see (Moodle's tool card, the Canvas developer
    key); one deployment serves every assignment, so it names none of them"""
    max_upload_bytes: int = field(default_factory=lambda: int(_env("MAX_UPLOAD_BYTES", str(5 * 1024 * 1024))))
    """MAX_UPLOAD_BYTES: larger uploads get 413 (default 5 MB)"""
    max_assignment_bytes: int = field(default_factory=lambda: int(_env("MAX_ASSIGNMENT_BYTES", str(50 * 1024 * 1024))))
    """MAX_ASSIGNMENT_BYTES: the files of one assignment course staff upload (default 50 MB)"""
    course_assignments: bool = field(default_factory=lambda: _env("COURSE_ASSIGNMENTS", "1") == "1")
    """COURSE_ASSIGNMENTS=1 (the default): course staff add their course's own assignments (their tests run
    confined, in a grading process of their own); 0: only operators add them (CLI) and courses choose"""
    score_policy: str = field(default_factory=lambda: _env("SCORE_POLICY", "best"))
    """SCORE_POLICY: "best" (a worse later attempt never lowers the gradebook) or "latest\""""
    trust_proxy: bool = field(default_factory=lambda: _env("TRUST_PROXY", "0") == "1")
    """TRUST_PROXY=1: trust X-Forwarded-* from one reverse proxy that terminates TLS"""
    secret_key: str = field(default_factory=lambda: _env("SECRET_KEY", ""))
    """SECRET_KEY: signs CSRF tokens; default a random key kept in DATA_DIR/secret_key"""
    http_timeout: float = field(default_factory=lambda: float(_env("HTTP_TIMEOUT", "10")))
    """HTTP_TIMEOUT: seconds for every request to a platform (JWKS, tokens, scores, registration)"""
    clock_skew: int = field(default_factory=lambda: int(_env("CLOCK_SKEW", "60")))
    """CLOCK_SKEW: seconds of platform clock drift tolerated in id_tokens"""
    grading_lease: float = field(default_factory=lambda: float(_env("GRADING_LEASE", "20")))
    """GRADING_LEASE: seconds a worker holds an attempt it grades; renewed while it works, so a killed
    worker's attempts are graded elsewhere soon after this"""
    worker_poll: float = field(default_factory=lambda: float(_env("WORKER_POLL", "2")))
    """WORKER_POLL: seconds between a worker's looks in the database for work the queue does not carry
    (attempts queued for longer than twice this, expired leases, grades due for a retry)"""
    insights_deadline: float = field(default_factory=lambda: float(_env("INSIGHTS_DEADLINE", "300")))
    """INSIGHTS_DEADLINE: seconds one link's insights (common mistakes, similar submissions) may take; the
    analysis runs in a process of its own that is stopped then, and staff are told it took too long"""
    warm_sandboxes: int = field(default_factory=lambda: int(_env("WARM_SANDBOXES", "2")))
    """WARM_SANDBOXES: sandboxes a worker process keeps started ahead for each of the assignments it graded
    last (its grading threads, usually; 0: each grading starts its own)"""
    pin_workers: bool = field(default_factory=lambda: _env("PIN_WORKERS", "1") == "1")
    """PIN_WORKERS=0: worker processes run on any CPU; by default each supervised worker process and its
    sandboxes keep to one CPU of their own while there are as many CPUs as workers"""
    passback_backoff: float = field(default_factory=lambda: float(_env("PASSBACK_BACKOFF", "2")))
    """PASSBACK_BACKOFF: seconds before the first retry of a score; doubles each time"""
    passback_max_backoff: float = field(default_factory=lambda: float(_env("PASSBACK_MAX_BACKOFF", "300")))
    """PASSBACK_MAX_BACKOFF: the longest wait between two tries of a score"""
    passback_retry_for: float = field(default_factory=lambda: float(_env("PASSBACK_RETRY_FOR", str(72 * 3600))))
    """PASSBACK_RETRY_FOR: seconds a score is retried after its first failure before it is marked failed"""
    web_connection_limit: int = field(default_factory=lambda: int(_env("WEB_CONNECTION_LIMIT", "2000")))
    """WEB_CONNECTION_LIMIT: open connections the web server accepts (idle keep-alive ones included)"""
    web_idle_timeout: int = field(default_factory=lambda: int(_env("WEB_IDLE_TIMEOUT", "75")))
    """WEB_IDLE_TIMEOUT: seconds after which the web server closes an idle connection (keep it longer
    than the reverse proxy's upstream keep-alive timeout)"""
    login_limit_per_client: int = field(default_factory=lambda: int(_env("LOGIN_LIMIT_PER_CLIENT", "300")))
    """LOGIN_LIMIT_PER_CLIENT: OIDC logins one client address may have pending (not yet launched, < 10 min)"""
    login_limit_total: int = field(default_factory=lambda: int(_env("LOGIN_LIMIT_TOTAL", "20000")))
    """LOGIN_LIMIT_TOTAL: OIDC logins pending from all clients together"""
    max_waiting_uploads: int = field(default_factory=lambda: int(_env("MAX_WAITING_UPLOADS", "3")))
    """MAX_WAITING_UPLOADS: notebooks one student may have waiting to be graded at once"""
    metrics_token: str = field(default_factory=lambda: _env("METRICS_TOKEN", ""))
    """METRICS_TOKEN: the bearer token /metrics asks for (none: no /metrics)"""
    public_url: str = field(default_factory=lambda: _env("PUBLIC_URL", ""))
    """PUBLIC_URL: the tool's address as platforms and browsers see it (for `platform invite`)"""
    lite_site: Path = field(default_factory=lambda: Path(_env("LITE_SITE", str(ROOT / "build/lite/site"))))
    """LITE_SITE: the JupyterLite site `make lite` builds; where there is none, students download and upload
    only (no "Open in the browser")"""
    lite_pyodide_url: str = field(default_factory=lambda: _env("LITE_PYODIDE_URL", ""))
    """LITE_PYODIDE_URL: Pyodide's folder on a CDN (https://cdn.jsdelivr.net/pyodide/v0.27.7/full/) for
    browsers to load Pyodide and its packages from, instead of this tool; it must be the site's version"""

    def __post_init__(self) -> None:
        if self.score_policy not in ("best", "latest"):
            raise ValueError(f"SCORE_POLICY must be 'best' or 'latest', not {self.score_policy!r}")

    @property
    def keys_dir(self) -> Path:
        return Path(self.keys_dir_setting) if self.keys_dir_setting else self.data_dir / "keys"

    @property
    def sqlalchemy_url(self) -> str:
        url = self.database_url or f"sqlite:///{self.data_dir / 'decode-grader.db'}"
        return url.replace("postgresql://", "postgresql+psycopg://", 1) if url.startswith("postgresql://") else url

    def ensure_secret_key(self) -> str:
        """SECRET_KEY, or a random key created once and kept (mode 0600) in the data directory."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # created earlier, or just now by another process
            return path.read_text().strip()
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
        return path.read_text().strip()
