"""JSON for durable workflow state: the values workflows and steps take and return, as text.

Plain JSON values (None, booleans, numbers, strings, lists, dicts with string keys) are written
as they are. The few other types docflow passes are written as tagged objects
(`{"$t": tag, ...}`) and read back as what they were: tuples, datetimes, dates, decimals,
exceptions (as `RecordedError`: the type's name and the message, never the object), and the
dataclasses and named tuples marked `@durable` (by their registered name; reading one builds
it from its fields, so nothing but those classes is ever constructed). Anything else refuses to
be written with a TypeError naming its type, and text that is not this format refuses to be
read: there is no fallback to pickle either way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TypeVar

__all__ = ["RecordedError", "decode", "dumps", "durable", "encode", "loads"]

TAG = "$t"
_registry: dict[str, type] = {}
T = TypeVar("T", bound=type)


class RecordedError(Exception):
    """An exception read back from durable state: the name of its type and its message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name
        self.message = message

    def __str__(self) -> str:
        return self.message


def error_kind(exc: BaseException) -> str:
    """The name of an error's type, also for one read back from durable state (a
    `RecordedError` names the type it was recorded from)."""
    return exc.type_name if isinstance(exc, RecordedError) else type(exc).__name__


def durable(cls: T) -> T:
    """Mark a dataclass or named tuple as a value a durable workflow may pass or return."""
    if not (dataclasses.is_dataclass(cls) or _is_named_tuple(cls)):
        raise TypeError(f"{cls.__qualname__} is neither a dataclass nor a named tuple")
    name = f"{cls.__module__}.{cls.__qualname__}"
    if _registry.setdefault(name, cls) is not cls:
        raise ValueError(f"{name} is already registered")
    return cls


def _is_named_tuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _name_of(cls: type) -> str | None:
    name = f"{cls.__module__}.{cls.__qualname__}"
    return name if _registry.get(name) is cls else None


def encode(value: Any) -> Any:
    """`value` as plain JSON values; TypeError for a value of a type not listed above."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and TAG not in value:
            return {k: encode(v) for k, v in value.items()}
        return {TAG: "dict", "items": [[encode(k), encode(v)] for k, v in value.items()]}
    name = _name_of(type(value))
    if name is not None:
        fields = value._asdict() if _is_named_tuple(type(value)) else _dataclass_fields(value)
        return {TAG: name, "fields": {k: encode(v) for k, v in fields.items()}}
    return _encode_other(value)


def _dataclass_fields(value: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}


def _encode_other(value: Any) -> Any:
    if isinstance(value, tuple):
        return {TAG: "tuple", "items": [encode(v) for v in value]}
    if isinstance(value, datetime):
        return {TAG: "datetime", "value": value.isoformat()}
    if isinstance(value, date):
        return {TAG: "date", "value": value.isoformat()}
    if isinstance(value, Decimal):
        return {TAG: "decimal", "value": str(value)}
    if isinstance(value, RecordedError):
        return {TAG: "error", "type": value.type_name, "message": value.message}
    if isinstance(value, BaseException):
        return {TAG: "error", "type": type(value).__name__, "message": _message(value)}
    raise TypeError(
        f"a value of type {type(value).__module__}.{type(value).__qualname__} cannot be "
        "stored in durable workflow state (mark it @durable or pass plain values)"
    )


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not stop the error being recorded
        return ""


_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "tuple": lambda o: tuple(decode(v) for v in o["items"]),
    "dict": lambda o: {decode(k): decode(v) for k, v in o["items"]},
    "datetime": lambda o: datetime.fromisoformat(o["value"]),
    "date": lambda o: date.fromisoformat(o["value"]),
    "decimal": lambda o: Decimal(o["value"]),
    "error": lambda o: RecordedError(str(o["type"]), str(o["message"])),
}


def decode(value: Any) -> Any:
    """The value `encode` was given; ValueError for an unknown tag."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get(TAG)
    if tag is None:
        return {k: decode(v) for k, v in value.items()}
    decoder = _DECODERS.get(tag)
    if decoder is not None:
        return decoder(value)
    cls = _registry.get(tag)
    if cls is None:
        raise ValueError(f"unknown type in durable workflow state: {tag!r}")
    return cls(**{k: decode(v) for k, v in value["fields"].items()})


def dumps(value: Any) -> str:
    """`value` as compact JSON text (see `encode`)."""
    return json.dumps(encode(value), separators=(",", ":"), ensure_ascii=False)


def loads(text: str) -> Any:
    """The value `dumps` wrote; ValueError for text that is not JSON of this format."""
    return decode(json.loads(text))
