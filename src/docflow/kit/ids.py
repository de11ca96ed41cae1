"""Prefixed, time-ordered identifiers: `prj_01j9z3k5...`.

The part after the prefix is a ULID (48-bit millisecond timestamp + 80 random bits) in lowercase
Crockford base32, 26 characters. Lexicographic order follows creation time (to the millisecond),
so ids make good keyset-pagination tie-breakers and keep B-tree inserts append-mostly.
"""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

TENANT = "ten"
USER = "usr"
API_KEY = "key"
PROJECT = "prj"
WORKFLOW = "wfl"
BATCH = "bat"
DOCUMENT = "doc"

ULID_LENGTH = 26


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def ulid(now_ms: int | None = None) -> str:
    """A 26-character lowercase ULID; `now_ms` overrides the clock (tests)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    return _encode(ms & ((1 << 48) - 1), 10) + _encode(secrets.randbits(80), 16)


def new_id(prefix: str) -> str:
    """A new identifier `<prefix>_<ulid>`; the prefix names the kind of object."""
    return f"{prefix}_{ulid()}"


def has_prefix(value: str, prefix: str) -> bool:
    """True when `value` looks like an id of the given kind (cheap shape check, no lookup)."""
    head, sep, tail = value.partition("_")
    return bool(sep) and head == prefix and len(tail) == ULID_LENGTH
