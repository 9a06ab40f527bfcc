"""Sandbox uids are exclusive across grading processes (file locks), and handed out round-robin."""

from autograder.sandbox.uids import UidPool


def test_two_pools_never_share_a_uid_and_reuse_comes_last(tmp_path):
    first, second = UidPool(size=3, lock_dir=tmp_path), UidPool(size=3, lock_dir=tmp_path)  # as two processes
    held = [first.acquire(100), first.acquire(100), second.acquire(100)]
    assert sorted(held) == [100, 101, 102]
    assert second.acquire(100) is None
    first.release(held[0])
    assert second.acquire(100) == held[0]
    first.release(held[1])
    assert first.acquire(100) == held[1]  # the only free one; round-robin moves past it otherwise
