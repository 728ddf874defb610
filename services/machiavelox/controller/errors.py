"""Errors of the controller's Kubernetes side."""

from __future__ import annotations


class KubeError(Exception):
    """The API server refused the request or could not be reached."""


class Conflict(KubeError):
    """409: the object changed since it was read, or already exists."""
