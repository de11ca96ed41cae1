"""Prefixed, time-ordered identifiers: `prj_01j9z3k5...`.

The part after the prefix is a ULID (48-bit millisecond timestamp + 80 random bits) in lowercase
Crockford base32, 26 characters. Lexicographic order follows creation time (to the millisecond),
so ids make good keyset-pagination tie-breakers and keep B-tree inserts append-mostly. Within one
process ids are strictly increasing even inside one millisecond (the random part is incremented,
as in the ULID spec's monotonic mode), so the documents of a batch list in the order declared.
"""

from __future__ import annotations

import secrets
import threading
import time
from datetime import datetime

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

TENANT = "ten"
USER = "usr"
API_KEY = "key"
PROJECT = "prj"
WORKFLOW = "wfl"
BATCH = "bat"
DOCUMENT = "doc"
REVIEW = "rev"
INVITATION = "inv"

ULID_LENGTH = 26


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


_RANDOM_BITS = 80
_lock = threading.Lock()
_last = (0, 0)  # (millisecond, random part) of the last id made here


def ulid() -> str:
    """A 26-character lowercase ULID, greater than every earlier one made by this process (if
    the clock steps back, the last millisecond is reused)."""
    global _last
    ms = int(time.time() * 1000)
    with _lock:
        last_ms, last_random = _last
        if ms <= last_ms and last_random + 1 < (1 << _RANDOM_BITS):
            ms, random_part = last_ms, last_random + 1
        else:
            random_part = secrets.randbits(_RANDOM_BITS - 1)  # headroom for increments
        _last = (ms, random_part)
    return _encode(ms & ((1 << 48) - 1), 10) + _encode(random_part, 16)


def new_id(prefix: str) -> str:
    """A new identifier `<prefix>_<ulid>`; the prefix names the kind of object."""
    return f"{prefix}_{ulid()}"


def has_prefix(value: str, prefix: str) -> bool:
    """True when `value` looks like an id of the given kind (cheap shape check, no lookup)."""
    head, sep, tail = value.partition("_")
    return bool(sep) and head == prefix and len(tail) == ULID_LENGTH


def floor_for(prefix: str, moment: datetime) -> str:
    """The smallest id of `prefix` made at `moment` or later (to the millisecond): every id
    made before it sorts below, so a time range of ids is a range of the id index."""
    ms = max(0, min(int(moment.timestamp() * 1000), (1 << 48) - 1))
    return f"{prefix}_{_encode(ms, 10)}{'0' * 16}"
