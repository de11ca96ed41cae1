"""The one place that reads the wall clock: timezone-aware UTC, microsecond precision."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """`value` in UTC; a naive datetime is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
