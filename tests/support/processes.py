"""Test access to the process helpers of `machiavelox.local.processes`."""

from machiavelox.local.processes import MACHIAVELOX, Proc, free_port, start, wait_healthy

__all__ = ["MACHIAVELOX", "Proc", "free_port", "start", "wait_healthy"]
