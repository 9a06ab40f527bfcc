"""Opaque references to a student on a link, for pages that hide names (anonymous grading, insights without
names): keyed with the tool's secret, so nobody who knows the LMS ids (every classmate does) can compute or
recognise one, and the same for a student on a link in every page, request and process (web and workers)."""

from __future__ import annotations

import functools
import hashlib
import hmac

from ..config import Config
from ..services import Services

REF_CHARS = 20  # hexadecimal characters: 80 bits


def student_ref(services: Services, key: dict, user_id: str) -> str:
    """The student's reference on the link (hexadecimal, REF_CHARS long)."""
    text = "\n".join(("student-ref", str(key["platform_id"]), key["context_id"], key["resource_link_id"], user_id))
    digest = hmac.new(_secret(services.config).encode(), text.encode(), hashlib.sha256).hexdigest()
    return digest[:REF_CHARS]


@functools.lru_cache(maxsize=4)
def _secret(config: Config) -> str:
    """SECRET_KEY, read once per process (without it, a file in DATA_DIR that every process of the tool shares)."""
    return config.ensure_secret_key()
