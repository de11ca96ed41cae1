"""Types for values clients send, shared by every request schema and query parameter.

Each refuses, as a validation error naming the field, what would otherwise pass validation
and fail later in the database or in arithmetic:

- `PositiveInt32` (versions) / `NonNegativeInt64` (sizes): integers that fit the column they
  are compared with or stored in (`Integer` is 32 bits on PostgreSQL, `BigInteger` 64); a JSON
  `true` is not a number. The bounds sit inside the type, where the OpenAPI document shows them
  as `minimum` / `maximum` (bounds added around a type with a validator would not be).
- `Flag`: a JSON boolean only (not `0`, `"yes"`).
- `Timestamp`: an RFC 3339 date-time string with its offset, between `MIN_TIME` and
  `MAX_TIME` once converted to UTC (`9999-12-31T23:59:59-14:00` is past year 9999 in UTC);
  a number (`0.5`, read as seconds since 1970 by pydantic's lax mode) is not a date-time.

Strings holding a character no database stores (`unstorable`) are refused for every string of
a request at once (`docflow.http.inputs`), and in cursors by `docflow.kit.pagination`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field, Strict

INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(9999, 1, 1, tzinfo=UTC)

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# The date and time parts of RFC 3339; the rest (fraction, offset) is left to pydantic, which
# names a missing offset ("Input should have timezone info").
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def unstorable(text: str) -> bool:
    """True when `text` holds a character no database can store: NUL (PostgreSQL refuses it in
    text) or an unpaired surrogate (not encodable as UTF-8)."""
    return _UNSTORABLE.search(text) is not None


def _not_bool(value: Any) -> Any:
    # pydantic's lax mode reads `true` as 1.
    if isinstance(value, bool):
        raise ValueError("Input should be a valid integer, not a boolean")
    return value


def _date_time_text(value: Any) -> Any:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE_TIME.match(value):
        raise ValueError("Input should be an RFC 3339 date-time, e.g. 2026-12-01T10:00:00Z")
    return value


def in_time_range(value: datetime) -> datetime:
    """`value` if it is aware and between MIN_TIME and MAX_TIME in UTC; ValueError otherwise."""
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if value.tzinfo is None or utc is None or not MIN_TIME <= utc < MAX_TIME:
        raise ValueError(
            f"Input should be between {MIN_TIME.isoformat()} and {MAX_TIME.isoformat()}"
        )
    return value


PositiveInt32 = Annotated[int, Field(ge=1, le=INT32_MAX), BeforeValidator(_not_bool)]
NonNegativeInt64 = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(_not_bool)]
Flag = Annotated[bool, Strict()]
Timestamp = Annotated[
    AwareDatetime, BeforeValidator(_date_time_text), AfterValidator(in_time_range)
]
