"""Pairs of students whose code is unusually alike: a hint for a person to read side by side, never a penalty.

copydetect tokenises and fingerprints each student's code (identifiers, strings and layout normalised, so
renamed variables still match; the handout is its boilerplate), scores a pair and finds its matching spans. It
compares every pair it is given, 500,000 for a class of 1,000, so candidates come from an inverted index
instead: fingerprint -> students. A fingerprint more than COMMON_SHARE of the class (or COMMON_CAP students)
has is the common solution (Decode's functions are one-liners most students write alike), not evidence: it is
left out of the index. Only
pairs sharing MIN_SHARED uncommon fingerprints are compared, once each, with copydetect's own score.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
from copydetect import CodeFingerprint, compare_files, defaults

K = defaults.NOISE_THRESHOLD  # 25 normalised characters per fingerprint, copydetect's default
WINDOW = defaults.GUARANTEE_THRESHOLD - defaults.NOISE_THRESHOLD + 1  # 1: copydetect keeps every k-gram
THRESHOLD = 0.9
"""Lowest score reported. Decode's answers are short and formulaic, so independent students share much: in
the tests' generated classes (several genuinely different ways to write each function, each student's own
checks and prints) independent pairs score up to 0.84 (eight classes of 40), renamed and reordered copies 0.95
or more. 0.5, copydetect's usual display level, would list dozens of innocent pairs."""
COMMON_SHARE = 0.1  # a fingerprint in more than this share of the students (and more than 2) is common
COMMON_CAP = 40  # ... or in more than this many: copying is between a few, and a large class's usual code is not
MIN_SHARED = K  # uncommon fingerprints a pair must share (one per character of a K-long run): without
# something uncommon in common, two students who both wrote the usual solution are not a hint
MIN_MATCH = 4 * K  # normalised characters two codes must share: a few matching lines are a coincidence
MAX_CODE = 20_000
MAX_STUDENTS = 5_000


@dataclass(frozen=True)
class Pair:
    a: str  # user ids, a < b
    b: str
    score: float  # the lower of the two shares of uncommon code found in the other's
    a_spans: tuple[tuple[int, int], ...]  # character ranges of a's code that match b's
    b_spans: tuple[tuple[int, int], ...]


def similar_pairs(code: dict[str, str], handout: str, limit: int = 50) -> list[Pair]:
    """The `limit` most alike pairs scoring THRESHOLD or more, highest score first, then by ids."""
    boilerplate = np.array(sorted(fingerprint(handout[:MAX_CODE]).hashes), dtype=np.int64)
    ids = sorted(code)[:MAX_STUDENTS]
    prints = {user: fingerprint(code[user][:MAX_CODE], boilerplate) for user in ids}
    ids = [user for user in ids if prints[user].hashes]  # empty, or nothing but the handout
    pairs = []
    for i, j in _candidates([prints[user] for user in ids], max(2, min(int(COMMON_SHARE * len(ids)), COMMON_CAP))):
        a, b = ids[i], ids[j]
        overlap, shares, (a_slices, b_slices) = compare_files(prints[a], prints[b])
        if min(shares) >= THRESHOLD and overlap >= MIN_MATCH:
            pairs.append(
                Pair(a, b, round(float(min(shares)), 4), _spans(a_slices, prints[a]), _spans(b_slices, prints[b]))
            )
    return sorted(pairs, key=lambda p: (-p.score, p.a, p.b))[:limit]


def fingerprint(code: str, boilerplate: np.ndarray | None = None) -> CodeFingerprint:
    """copydetect's fingerprint of Python code, in memory."""
    return CodeFingerprint("answer.py", K, WINDOW, boilerplate, language="python", fp=io.StringIO(code))


def _candidates(prints: list[CodeFingerprint], most: int) -> list[tuple[int, int]]:
    """The pairs (positions in `prints`, i < j) sharing at least MIN_SHARED uncommon fingerprints."""
    if len(prints) < 2:
        return []
    hashes = [np.fromiter(p.hashes, dtype=np.int64, count=len(p.hashes)) for p in prints]
    owners = np.repeat(np.arange(len(prints)), [len(h) for h in hashes])
    flat = np.concatenate(hashes)
    order = np.argsort(flat, kind="stable")
    flat, owners = flat[order], owners[order]
    values, starts, counts = np.unique(flat, return_index=True, return_counts=True)
    shared = np.flatnonzero((counts >= 2) & (counts <= most))
    if not len(shared):
        return []
    n = len(prints)
    keys = [_pair_keys(owners[starts[g] : starts[g] + counts[g]], n) for g in shared]
    pair_keys, together = np.unique(np.concatenate(keys), return_counts=True)
    enough = pair_keys[together >= MIN_SHARED]
    return list(zip((enough // n).tolist(), (enough % n).tolist(), strict=True))


def _pair_keys(members: np.ndarray, n: int) -> np.ndarray:
    """Every pair of the (sorted) students sharing one fingerprint, as i * n + j with i < j."""
    i, j = np.triu_indices(len(members), 1)
    return members[i] * n + members[j]


def _spans(slices: np.ndarray, print_: CodeFingerprint) -> tuple[tuple[int, int], ...]:
    """copydetect's slices (starts, ends) as plain (start, end) character ranges within the code."""
    if len(slices) == 0 or not np.size(slices):
        return ()
    size = len(print_.raw_code)
    spans = ((min(int(s), size), min(int(e), size)) for s, e in zip(slices[0], slices[1], strict=True))
    return tuple((s, e) for s, e in spans if s < e)
