"""Cursor pagination: pages of items and opaque cursors over keyset values.

A cursor is the base64url encoding of the sort-key values of the last item of a page (JSON, with
datetimes tagged). It is opaque to clients; a malformed one is `InvalidInput`. `keyset_page` turns a
statement ordered by `order` columns into one page: it adds the "after the cursor" condition and
the ORDER BY, fetches `limit + 1` rows and derives the next cursor from the last item kept.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, Select, and_, literal, or_, tuple_
from sqlalchemy.orm import InstrumentedAttribute, Session

from docflow.errors import InvalidInput
from docflow.kit.inputs import INT64_MAX, INT64_MIN, in_time_range, unstorable

T = TypeVar("T")
U = TypeVar("U")

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

CursorValue = str | int | float | datetime | None


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list; `next_cursor` is None on the last page."""

    items: list[T]
    next_cursor: str | None

    def map(self, fn: Callable[[T], U]) -> Page[U]:
        """The same page with every item transformed (same cursor)."""
        return Page(items=[fn(item) for item in self.items], next_cursor=self.next_cursor)


@dataclass(frozen=True)
class SortKey:
    """One column of a keyset ordering."""

    column: InstrumentedAttribute[Any]
    descending: bool = False


def check_limit(limit: int | None) -> int:
    """The page size to use: DEFAULT_LIMIT when None, InvalidInput outside 1..MAX_LIMIT."""
    if limit is None:
        return DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
    return limit


def _to_json(value: CursorValue) -> Any:
    return {"dt": value.isoformat()} if isinstance(value, datetime) else value


def _from_json(value: Any) -> CursorValue:
    if isinstance(value, dict) and set(value) == {"dt"}:
        return datetime.fromisoformat(value["dt"])
    if value is None or isinstance(value, str | int | float):
        return value
    raise ValueError("unexpected cursor value")


def encode_cursor(values: Sequence[CursorValue]) -> str:
    """The opaque cursor for these keyset values."""
    raw = json.dumps([_to_json(v) for v in values], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(cursor: str, size: int) -> list[CursorValue]:
    """The keyset values of a cursor of `size` values; InvalidInput when malformed."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
        if not isinstance(values, list) or len(values) != size:
            raise ValueError("wrong cursor size")
        return [_from_json(v) for v in values]
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("malformed cursor", field="cursor") from exc


def _storable(value: CursorValue) -> bool:
    if isinstance(value, str):
        return not unstorable(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return INT64_MIN <= value <= INT64_MAX
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, datetime):
        try:
            in_time_range(value)
        except ValueError:
            return False
    return True


def _check_types(order: Sequence[SortKey], values: Sequence[CursorValue]) -> None:
    """A cursor made for another list (or forged) must not reach the database as a bad value:
    a value of another type, or one no column holds (NUL, past 64 bits, a time out of range)."""
    for key, value in zip(order, values, strict=True):
        expected = key.column.type.python_type
        if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
            raise InvalidInput("cursor does not belong to this list", field="cursor")
        if not _storable(value):
            raise InvalidInput("malformed cursor", field="cursor")


def _after(order: Sequence[SortKey], values: Sequence[CursorValue]) -> ColumnElement[bool]:
    """Rows strictly after `values` in `order`."""
    bound = [literal(v, type_=k.column.type) for k, v in zip(order, values, strict=True)]
    if len({k.descending for k in order}) == 1:
        # One direction: a row-value comparison, which both engines serve from the index.
        left = tuple_(*[k.column for k in order])
        right = tuple_(*bound)
        return left < right if order[0].descending else left > right
    terms = []
    for i, key in enumerate(order):
        equal = [order[j].column == bound[j] for j in range(i)]
        step = key.column < bound[i] if key.descending else key.column > bound[i]
        terms.append(and_(*equal, step))
    return or_(*terms)


def keyset_page(
    session: Session,
    stmt: Select[T],
    *,
    order: Sequence[SortKey],
    cursor: str | None,
    limit: int | None,
) -> Page[T]:
    """Run `stmt` for one page in `order`, starting after `cursor`."""
    size = check_limit(limit)
    if cursor:
        values = decode_cursor(cursor, len(order))
        _check_types(order, values)
        stmt = stmt.where(_after(order, values))
    stmt = stmt.order_by(*[k.column.desc() if k.descending else k.column.asc() for k in order])
    rows = list(session.scalars(stmt.limit(size + 1)))
    if len(rows) <= size:
        return Page(items=rows, next_cursor=None)
    last = rows[size - 1]
    return Page(
        items=rows[:size],
        next_cursor=encode_cursor([getattr(last, k.column.key) for k in order]),
    )
