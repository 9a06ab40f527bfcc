"""The parity corpus for one session: builds once, stock `otter run` in the background (see testbed/parity.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.parity import Case, Corpus


@pytest.fixture(scope="session")
def parity(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    """The corpus, with the reference runs of every selected case already started, in test order."""
    corpus = Corpus(tmp_path_factory.mktemp("parity"))
    for item in request.session.items:
        case = getattr(item, "callspec", None) and item.callspec.params.get("case")
        if isinstance(case, Case):
            corpus.reference(case)
    yield corpus
    corpus.close()
