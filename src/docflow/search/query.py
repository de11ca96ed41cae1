"""A search request read into bounded, typed conditions: the words of `q` and the `field.*`
parameters (`field.total.gte=100`, `field.date.lte=2026-01-31`, `field.vendor=Acme`).

Every bad part is `InvalidInput` naming the query parameter: too long a query, too many
words or conditions, a malformed `field.*` name or operator, a range over a value that is
neither a number nor an ISO date, and (`check_fields`) a field no workflow has.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date

from docflow.errors import InvalidInput
from docflow.extraction.definition import FIELD_NAME
from docflow.search.repository import FieldCondition

FIELD_PREFIX = "field."
MAX_QUERY = 500
MAX_TERMS = 20
MAX_CONDITIONS = 10
MAX_VALUE = 200
OPERATORS = ("eq", "gt", "gte", "lt", "lte")
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"^-?[0-9]{1,18}(\.[0-9]{1,12})?$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


@dataclass(frozen=True)
class SearchQuery:
    terms: list[str]
    project_id: str | None = None
    status: str | None = None
    conditions: list[FieldCondition] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)  # field name -> its parameter

    def check_fields(self, known: frozenset[str]) -> None:
        """InvalidInput naming the parameter of the first condition on a field not in `known`."""
        for condition in self.conditions:
            if condition.name not in known:
                raise InvalidInput(
                    f"no workflow has a field {condition.name!r}",
                    field=self.parameters[condition.name],
                )


def terms_of(q: str | None) -> list[str]:
    """The words of `q`, lower-cased, at most MAX_TERMS; [] without `q`."""
    if q is None:
        return []
    if len(q) > MAX_QUERY:
        raise InvalidInput(f"q is longer than {MAX_QUERY} characters", field="q")
    terms = [w.lower() for w in _WORD.findall(q)]
    if not terms:
        raise InvalidInput("q has no word to search for", field="q")
    if len(terms) > MAX_TERMS:
        raise InvalidInput(f"q has more than {MAX_TERMS} words", field="q")
    return terms


def _number(value: str) -> float | None:
    if not _NUMBER.match(value):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _date(value: str) -> str | None:
    if not _DATE.match(value):
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        return None


def condition(parameter: str, value: str) -> FieldCondition:
    """The condition of one `field.<name>[.<op>]` parameter."""
    parts = parameter[len(FIELD_PREFIX) :].split(".")
    name, op = (parts[0], "eq") if len(parts) == 1 else (parts[0], parts[1])
    if len(parts) > 2 or not re.fullmatch(FIELD_NAME, name):
        raise InvalidInput("expected field.<name> or field.<name>.<op>", field=parameter)
    if op not in OPERATORS:
        raise InvalidInput(
            f"unknown operator {op!r}: one of {', '.join(OPERATORS)}", field=parameter
        )
    if not value or len(value) > MAX_VALUE:
        raise InvalidInput(f"a value of 1 to {MAX_VALUE} characters is needed", field=parameter)
    number = _number(value)
    if number is not None:
        return FieldCondition(name, op, number, "number")
    day = _date(value)
    if day is not None:
        return FieldCondition(name, op, day, "date")
    if op != "eq":
        raise InvalidInput(f"{op} needs a number or a date (YYYY-MM-DD)", field=parameter)
    return FieldCondition(name, op, value, "text")


def read_query(
    *, q: str | None, project_id: str | None, status: str | None, fields: dict[str, str]
) -> SearchQuery:
    """The search of these parameters (`fields`: every `field.*` parameter, by name)."""
    if len(fields) > MAX_CONDITIONS:
        raise InvalidInput(f"at most {MAX_CONDITIONS} field conditions", field=next(iter(fields)))
    conditions = [condition(p, v) for p, v in fields.items()]
    return SearchQuery(
        terms=terms_of(q),
        project_id=project_id,
        status=status,
        conditions=conditions,
        parameters={c.name: p for c, p in zip(conditions, fields, strict=True)},
    )
