"""Machiavelox: a real-time, turn-less, three-player Machiavelli, served over gRPC."""

__version__ = "0.1.0"
