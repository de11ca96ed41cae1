"""Readiness checks: what `/readyz` runs, and how a check reports that something needs attention.

Defined here, below HTTP, so the parts that own a signal (the events, the reconciler) write their
checks without importing the HTTP edge; `docflow.http.health` runs them.
"""

from __future__ import annotations

from collections.abc import Callable

ReadinessCheck = Callable[[], None]
"""Raises when the dependency it checks is not usable (`Degraded` when it works but needs
attention)."""


class Degraded(Exception):
    """Raised by a readiness check whose dependency works but is over a threshold."""
