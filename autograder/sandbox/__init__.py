"""The sandbox that runs student code: bubblewrap, a dedicated uid, one cgroup, a watchdog."""

from .bwrap import Sandbox, SandboxUnavailable, find_bwrap

__all__ = ["Sandbox", "SandboxUnavailable", "find_bwrap"]
