"""Query parameters a route does not declare are refused, for every route at once.

A body field the schema does not know is a 422 (`extra="forbid"`); a query parameter the
route does not know is the same mistake (`?project=` for `?project_id=`, a filter this
version lacks) and must not be silently ignored, or the client reads an unfiltered list as a
filtered one. One app-wide dependency compares the request's query parameter names with those
the matched route declares (its own and its dependencies', e.g. `cursor` and `limit` of
pagination) and answers 422 naming each unknown one, as request validation does.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError

MESSAGE = "Unknown query parameter"


def _declared(dependant: Dependant) -> frozenset[str]:
    names: set[str] = set()
    pending = [dependant]
    while pending:
        current = pending.pop()
        names.update(field.alias for field in current.query_params)
        pending.extend(current.dependencies)
    return frozenset(names)


def declared_query_parameters(route: object) -> frozenset[str]:
    """The query parameter names `route` (a FastAPI route) reads; computed once per route
    and kept on its dependant."""
    dependant = getattr(route, "dependant", None)
    if not isinstance(dependant, Dependant):
        return frozenset()
    by_dependant = _known.get(id(dependant))
    if by_dependant is None or by_dependant[0] is not dependant:
        by_dependant = (dependant, _declared(dependant))
        _known[id(dependant)] = by_dependant
    return by_dependant[1]


# Routes live as long as their app; keyed by identity (routes are not hashable), with the
# dependant kept so a reused id never answers for another route.
_known: dict[int, tuple[Dependant, frozenset[str]]] = {}


async def refuse_unknown_query_parameters(request: Request) -> None:
    """An app-wide dependency: 422 for each query parameter the matched route does not read."""
    if not request.query_params:
        return
    route = request.scope.get("route")
    if route is None:
        return
    known = declared_query_parameters(route)
    unknown = sorted({name for name in request.query_params if name not in known})
    if unknown:
        raise RequestValidationError(
            [{"type": "query_unknown", "loc": ("query", name), "msg": MESSAGE} for name in unknown]
        )
