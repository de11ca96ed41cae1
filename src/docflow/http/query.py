"""Query parameters a route does not declare are refused, for every route at once.

A body field the schema does not know is a 422 (`extra="forbid"`); a query parameter the
route does not know is the same mistake (`?project=` for `?project_id=`, a filter this
version lacks) and must not be silently ignored, or the client reads an unfiltered list as a
filtered one. One app-wide dependency compares the request's query parameter names with those
the matched route declares (its own and its dependencies', e.g. `cursor` and `limit` of
pagination) and answers 422 naming each unknown one, as request validation does.

A route that takes a family of parameters by name (`GET /v1/search`'s `field.<name>.<op>`)
declares it with the dependency `Prefixed(prefix)`: every parameter starting with the prefix
is then known to the route, and handed to it as a mapping.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError

MESSAGE = "Unknown query parameter"
REPEATED = "Query parameter given more than once"


class Prefixed:
    """A dependency: every query parameter whose name starts with `prefix`, by name (each at
    most once: a repeated one is a 422). Declaring it makes those names known to the route."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def __call__(self, request: Request) -> dict[str, str]:
        found: dict[str, str] = {}
        for name, value in request.query_params.multi_items():
            if not name.startswith(self.prefix):
                continue
            if name in found:
                raise RequestValidationError(
                    [{"type": "query_repeated", "loc": ("query", name), "msg": REPEATED}]
                )
            found[name] = value
        return found


@dataclass(frozen=True)
class Declared:
    """The names a route reads, and the prefixes of the families it reads (`Prefixed`)."""

    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def knows(self, name: str) -> bool:
        return name in self.names or any(name.startswith(p) for p in self.prefixes)


def _declared(dependant: Dependant) -> Declared:
    names: set[str] = set()
    prefixes: list[str] = []
    pending = [dependant]
    while pending:
        current = pending.pop()
        names.update(field.alias for field in current.query_params)
        if isinstance(current.call, Prefixed):
            prefixes.append(current.call.prefix)
        pending.extend(current.dependencies)
    return Declared(frozenset(names), tuple(prefixes))


def declared_query_parameters(route: object) -> Declared:
    """The query parameter names `route` (a FastAPI route) reads; computed once per route
    and kept on its dependant."""
    dependant = getattr(route, "dependant", None)
    if not isinstance(dependant, Dependant):
        return Declared()
    by_dependant = _known.get(id(dependant))
    if by_dependant is None or by_dependant[0] is not dependant:
        by_dependant = (dependant, _declared(dependant))
        _known[id(dependant)] = by_dependant
    return by_dependant[1]


# Routes live as long as their app; keyed by identity (routes are not hashable), with the
# dependant kept so a reused id never answers for another route.
_known: dict[int, tuple[Dependant, Declared]] = {}


async def refuse_unknown_query_parameters(request: Request) -> None:
    """An app-wide dependency: 422 for each query parameter the matched route does not read."""
    if not request.query_params:
        return
    route = request.scope.get("route")
    if route is None:
        return
    known = declared_query_parameters(route)
    unknown = sorted({name for name in request.query_params if not known.knows(name)})
    if unknown:
        raise RequestValidationError(
            [{"type": "query_unknown", "loc": ("query", name), "msg": MESSAGE} for name in unknown]
        )
