"""Opaque cursors and keyset pages, including a mixed-direction ordering on a real table."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.orm import Session

from docflow.errors import InvalidInput
from docflow.kit.pagination import (
    MAX_LIMIT,
    SortKey,
    check_limit,
    decode_cursor,
    encode_cursor,
    keyset_page,
)
from docflow.projects import service as projects
from docflow.projects.models import Project
from docflow.projects.repository import ProjectRepository
from docflow.tenancy import TenantContext


def test_cursor_round_trip_keeps_types() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    values = [when, "prj_x", 7, None]
    cursor = encode_cursor(values)
    assert "=" not in cursor and "/" not in cursor and "+" not in cursor
    assert decode_cursor(cursor, 4) == values


@pytest.mark.parametrize("cursor", ["%%%", "bm90IGpzb24", encode_cursor(["a"]), "W3siZHQiOjF9XQ"])
def test_malformed_cursors_are_invalid_input(cursor: str) -> None:
    with pytest.raises(InvalidInput):
        decode_cursor(cursor, 2)


def test_limits() -> None:
    assert check_limit(None) == 50
    assert check_limit(MAX_LIMIT) == MAX_LIMIT
    for bad in (0, -1, MAX_LIMIT + 1):
        with pytest.raises(InvalidInput):
            check_limit(bad)


def test_mixed_direction_keyset_visits_every_row_once(
    session: Session, tenant_a: TenantContext
) -> None:
    for i in range(9):
        projects.create_project(session, tenant_a, name=f"p{i}", description=f"group{i % 3}")
    repo = ProjectRepository(session, tenant_a.tenant_id)
    order = (SortKey(Project.description), SortKey(Project.id, descending=True))
    expected = sorted(
        repo.page(cursor=None, limit=50).items, key=lambda p: (p.description, _neg(p.id))
    )
    seen: list[str] = []
    cursor = None
    while True:
        page = keyset_page(session, repo.base(Project), order=order, cursor=cursor, limit=2)
        seen += [p.id for p in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [p.id for p in expected]


def _neg(value: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in value)


def test_a_cursor_of_another_list_is_refused(session: Session, tenant_a: TenantContext) -> None:
    repo = ProjectRepository(session, tenant_a.tenant_id)
    order = (SortKey(Project.updated_at), SortKey(Project.id))
    wrong = [encode_cursor(["prj_x", "prj_y"]), encode_cursor([datetime.now(UTC), 3])]
    for cursor in wrong:
        with pytest.raises(InvalidInput, match="cursor"):
            keyset_page(session, repo.base(Project), order=order, cursor=cursor, limit=5)
    with pytest.raises(InvalidInput, match="cursor"):
        projects.list_projects(session, tenant_a, cursor=encode_cursor([7]), limit=5)


@pytest.mark.parametrize(
    "values",
    [
        [2**70, "prj_x"],  # past 64 bits: SQLite cannot bind it
        [1, "prj_\x00"],  # PostgreSQL refuses NUL in text
        [1, "prj_\ud800"],  # not encodable as UTF-8
    ],
)
def test_a_cursor_no_column_can_hold_is_refused(
    session: Session, tenant_a: TenantContext, values: list[Any]
) -> None:
    repo = ProjectRepository(session, tenant_a.tenant_id)
    order = (SortKey(Project.batch_count), SortKey(Project.id))
    cursor = encode_cursor(values)
    with pytest.raises(InvalidInput, match="malformed cursor"):
        keyset_page(session, repo.base(Project), order=order, cursor=cursor, limit=5)


@pytest.mark.parametrize(
    "when", ["9999-12-31T23:59:59-14:00", "2026-01-01T00:00:00", "1969-12-31T23:59:59+00:00"]
)
def test_a_cursor_time_out_of_range_is_refused(
    session: Session, tenant_a: TenantContext, when: str
) -> None:
    repo = ProjectRepository(session, tenant_a.tenant_id)
    order = (SortKey(Project.updated_at), SortKey(Project.id))
    cursor = encode_cursor([datetime.fromisoformat(when), "prj_x"])
    with pytest.raises(InvalidInput, match="malformed cursor"):
        keyset_page(session, repo.base(Project), order=order, cursor=cursor, limit=5)
