"""Tenant regular expressions, run on RE2: matching time linear in the text, whatever the pattern.

Python's `re` backtracks: `(a+)+$` over `"a" * 29 + "!"` takes minutes, holding the interpreter
lock all along. RE2 (the `google-re2` package) has no backtracking and releases the lock while it
matches, so a tenant's pattern cannot freeze a worker. The price is its syntax: no backreferences
(`\\1`, `(?P=name)`), no lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), no possessive quantifiers, no
`\\Z` (RE2 spells it `\\z`), no verbose mode (`(?x)`); `\\d`, `\\w`, `\\s` and `\\b` are ASCII
(`\\pN`, `\\pL`, `\\p{Greek}` reach the rest of Unicode). Every pattern a tenant gives is compiled
here, once, and a pattern RE2 cannot run is refused with `PatternError` when the workflow is
defined, never found out while a document is processed.

Bounds: a pattern has at most `MAX_PATTERN_LENGTH` characters and compiles within `MAX_MEMORY`
bytes to at most `MAX_PROGRAM_SIZE` RE2 instructions (at worst RE2's matching time is the length
of the text times the size of the program: about 50 microseconds a character at this bound); a
locator reads at most `MAX_MATCHES` matches of a document.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2

MAX_PATTERN_LENGTH = 1000
MAX_PROGRAM_SIZE = 5000
MAX_MEMORY = 1 << 20
MAX_MATCHES = 100


class PatternError(ValueError):
    """A pattern RE2 cannot run, or one over the bounds; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Found:
    """One match: the span and text of its first group when that group took part, else of the
    whole match."""

    start: int
    end: int
    text: str


def _options() -> Any:
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.log_errors = False  # a refused pattern is reported to the caller, not on stderr
    return options


# As many as the re2 module keeps itself: at most 128 programs of at most MAX_MEMORY each.
@functools.lru_cache(maxsize=128)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 program of `pattern` (cached); PatternError if it cannot or may not run."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"pattern longer than {MAX_PATTERN_LENGTH} characters")
    try:
        compiled = re2.compile(pattern, _options())
    except re2.error as exc:
        raise PatternError(
            f"not a supported regular expression (RE2 syntax): {_reason(exc)}"
        ) from exc
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(
            f"pattern too large: it compiles to {compiled.programsize} instructions, "
            f"at most {MAX_PROGRAM_SIZE} are allowed"
        )
    return compiled


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else "invalid pattern"
    text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    for fragment, hint in _HINTS:
        if fragment in text:
            return f"{text} ({hint})"
    return text


_HINTS = (
    ("operator: (?=", "lookahead is not supported"),
    ("operator: (?!", "lookahead is not supported"),
    ("operator: (?<", "lookbehind is not supported"),
    ("operator: (?P", "named backreferences are not supported"),
    ("\\Z", "write \\z for the end of the text"),
    *((f"sequence: \\{digit}", "backreferences are not supported") for digit in "123456789"),
)


def check_pattern(pattern: str) -> str:
    """`pattern` unchanged when RE2 can run it; PatternError otherwise (definition validation)."""
    compile_pattern(pattern)
    return pattern


def find_all(pattern: str, text: str, *, limit: int) -> Iterator[Found]:
    """The first `limit` matches of `pattern` in `text`, left to right."""
    compiled = compile_pattern(pattern)
    group = 1 if compiled.groups else 0
    for count, match in enumerate(compiled.finditer(text)):
        if count >= limit:
            return
        chosen = group if group and match.group(group) is not None else 0
        yield Found(match.start(chosen), match.end(chosen), match.group(chosen))


def full_match(pattern: str, text: str) -> bool:
    """Whether the whole of `text` matches `pattern`."""
    return compile_pattern(pattern).fullmatch(text) is not None
