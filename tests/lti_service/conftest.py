"""Fixtures of the tool's tests; the LMS they start and the helpers they share are in testbed/lms.py."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from autograder.pool import close_all
from autograder.sandbox.bwrap import released

POSTGRES = "postgresql://postgres@127.0.0.1:5432"


@pytest.fixture(autouse=True)
def no_sandbox_outlives_its_test():
    """Tests that grade in this process (the workers' functions called directly) leave the sandboxes the
    worker keeps started ahead: they are stopped with the test, as every process a test starts is."""
    yield
    close_all()
    released()


@pytest.fixture
def database():
    """A fresh PostgreSQL database for this test, dropped afterwards."""
    name = f"decode_grader_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"{POSTGRES}/{name}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
