"""Tenant scoping: the verified caller's tenant, and the base every tenant query starts from.

The tenant id reaches a repository only from a verified credential (`TenantContext`, built by
`tenants.service.authenticate`) or from a row that was itself read under that tenant. Every
query of tenant data starts from `TenantRepository.base(Model)`, already filtered by tenant, and
every update or delete from `scoped_update` / `scoped_delete`; on PostgreSQL row-level security
repeats the filter in the database. The few lookups that must cross tenants by design (API-key
authentication, the pipeline finding a batch's tenant) are functions marked `@cross_tenant`,
which the architecture test allows to query tenant tables without the filter.

The verified tenant's id has its own type, `TenantId`, which a request context requires: a raw
string where a `TenantId` is needed is a type error. Only the factories below make one, each
named for where the id came from; calling `TenantId(...)` anywhere else is a defect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NewType, TypeVar

from sqlalchemy import ColumnElement, Delete, Insert, Select, Update, delete, insert, select, update
from sqlalchemy.orm import Session

from docflow.db import Base, bind_tenant
from docflow.errors import Conflict

TenantId = NewType("TenantId", str)
"""A tenant id the caller may act for. Made only by the factories below (at run time it is
the plain string, so durable records and logs hold a string)."""


def from_credential(tenant_id: str) -> TenantId:
    """The tenant of a verified credential (an API key whose secret matched)."""
    return TenantId(tenant_id)


def found_across_tenants(tenant_id: str) -> TenantId:
    """A tenant id a `@cross_tenant` lookup found (a key by prefix, a batch's tenant by id, the
    batches due to start, the tenants a sweep visits): only such lookups call this."""
    return TenantId(tenant_id)


def recorded_by_flow(tenant_id: str) -> TenantId:
    """The tenant a durable workflow recorded as its input when it was started for a verified
    tenant: steps read it back from the workflow's arguments."""
    return TenantId(tenant_id)


def operator(tenant_id: str) -> TenantId:
    """A tenant named by an operator on the command line (who holds the database itself)."""
    return TenantId(tenant_id)


# Scopes a broader scope grants as well: a key that may change data may also review it.
IMPLIED_SCOPES: dict[str, frozenset[str]] = {"write": frozenset({"review"})}


def grants(held: Iterable[str], scope: str) -> bool:
    """Whether scopes `held` grant `scope`: "*" grants every scope, a scope itself, and a
    broader scope those it implies."""
    held = tuple(held)
    if "*" in held or scope in held:
        return True
    return any(scope in IMPLIED_SCOPES.get(h, ()) for h in held)


@dataclass(frozen=True)
class TenantContext:
    """Who is calling: the tenant (from the credential alone), the key used, its scopes and,
    when the key belongs to a user, that user."""

    tenant_id: TenantId
    key_id: str | None = None
    scopes: tuple[str, ...] = ()
    user_id: str | None = None

    def has_scope(self, scope: str) -> bool:
        return grants(self.scopes, scope)

    @property
    def actor(self) -> str:
        """Who an action is attributed to: the key's user, else the key, else the operator."""
        if self.user_id is not None:
            return self.user_id
        if self.key_id is not None:
            return self.key_id
        return "operator"


M = TypeVar("M", bound=Base)
F = TypeVar("F", bound=Callable[..., Any])


class TenantRepository:
    """Base of every repository of tenant data: all statements are scoped to `tenant_id`.

    Constructing one binds the session to the tenant (see `docflow.db.bind_tenant`), so on
    PostgreSQL the row-level security policies see the same tenant as the query filter.
    """

    def __init__(self, session: Session, tenant_id: str) -> None:
        if not tenant_id:
            raise ValueError("a tenant repository needs a tenant")
        bind_tenant(session, tenant_id)
        self.session = session
        self.tenant_id = tenant_id

    def _owned_by_tenant(self, model: type[Base]) -> ColumnElement[bool]:
        column = getattr(model, "tenant_id", None)
        if column is None:
            raise TypeError(f"{model.__name__} is not tenant data (no tenant_id column)")
        condition: ColumnElement[bool] = column == self.tenant_id
        return condition

    def base(self, model: type[M]) -> Select[M]:
        """`SELECT model WHERE model.tenant_id = <tenant>`: the start of every tenant query."""
        return select(model).where(self._owned_by_tenant(model))

    def scoped_update(self, model: type[M]) -> Update:
        """`UPDATE model WHERE tenant_id = <tenant>`: add the rest of the WHERE and the values."""
        return update(model).where(self._owned_by_tenant(model))

    def scoped_insert(self, model: type[M]) -> Insert:
        """`INSERT INTO model` with `tenant_id = <tenant>`: add the other values."""
        return insert(model).values(tenant_id=self.tenant_id)

    def scoped_delete(self, model: type[M]) -> Delete:
        """`DELETE FROM model WHERE tenant_id = <tenant>`."""
        return delete(model).where(self._owned_by_tenant(model))


def cross_tenant(reason: str) -> Callable[[F], F]:
    """Mark a repository function that reads tenant tables across tenants on purpose.

    Only for lookups that must happen before the tenant is known; on PostgreSQL they go through a
    SECURITY DEFINER function that returns the minimum (the tenant id, a key's hash).
    `reason` documents why; the architecture test lists these functions.
    """
    if not reason.strip():
        raise ValueError("say why the lookup crosses tenants")

    def mark(fn: F) -> F:
        fn.__cross_tenant_reason__ = reason  # type: ignore[attr-defined]
        return fn

    return mark


CAS_ATTEMPTS = 20
T = TypeVar("T")


def until_set(attempt: Callable[[], T | None], *, conflict: str, attempts: int = CAS_ATTEMPTS) -> T:
    """Run `attempt` until it returns a value, at most `attempts` times.

    The optimistic update of a versioned row: each call reads the row afresh, decides, and
    tries its repository's `compare_and_set`, returning None when another writer changed the
    row first (the next call reads it again) and anything else once it is settled. A row that
    keeps changing raises `Conflict` with the message `conflict`.
    """
    for _ in range(attempts):
        result = attempt()
        if result is not None:
            return result
    raise Conflict(conflict)
