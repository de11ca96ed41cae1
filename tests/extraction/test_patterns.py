"""Tenant patterns on RE2: a catastrophic pattern matches in linear time, what RE2 cannot run is
refused with a reason, and the bounds on length, program size and matches hold."""

from __future__ import annotations

import pytest
from tests.support.timing import within

from docflow.extraction.patterns import (
    MAX_PATTERN_LENGTH,
    MAX_PROGRAM_SIZE,
    Found,
    PatternError,
    check_pattern,
    compile_pattern,
    find_all,
    full_match,
)

EVIL = r"(a+)+$"
EVIL_TEXT = "a" * 29 + "!"  # Python's re backtracks through 2**29 ways of splitting the a's


def test_a_catastrophic_pattern_answers_well_under_a_second() -> None:
    with within(0.5):
        assert list(find_all(EVIL, EVIL_TEXT * 1000, limit=10)) == []
        assert not full_match(EVIL, EVIL_TEXT)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", "backreferences are not supported"),
        (r"(?P<n>a)(?P=n)", "named backreferences are not supported"),
        (r"INV(?=-)", "lookahead is not supported"),
        (r"INV(?!-)", "lookahead is not supported"),
        (r"(?<=No)\d+", "lookbehind is not supported"),
        (r"(?<!No)\d+", "lookbehind is not supported"),
        (r"total\Z", r"write \z"),
        (r"(?x) a b", "invalid perl operator"),
        (r"a++", "bad repetition operator"),
        ("(unclosed", "missing )"),
    ],
)
def test_what_re2_cannot_run_is_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(PatternError, match="RE2 syntax") as refused:
        check_pattern(pattern)
    assert reason in str(refused.value)


def test_length_and_program_size_are_bounded() -> None:
    assert check_pattern("a" * MAX_PATTERN_LENGTH)
    with pytest.raises(PatternError, match=f"longer than {MAX_PATTERN_LENGTH}"):
        check_pattern("a" * (MAX_PATTERN_LENGTH + 1))
    # Short to write, large to run: RE2's time grows with the program's size.
    with pytest.raises(PatternError, match=f"at most {MAX_PROGRAM_SIZE}"):
        check_pattern(r"(.{0,50}){20}")
    with pytest.raises(PatternError, match="RE2 syntax"):
        check_pattern(r"\pL{1000}")  # over RE2's memory budget


def test_python_syntax_that_re2_shares_is_accepted() -> None:
    for pattern in (r"(?i)inv(?:oice)?\s*#?(\d+)", r"(?P<y>\d{4})-(?<m>\d\d)", r"\pL+ \pL+"):
        assert check_pattern(pattern) == pattern
    assert compile_pattern(r"(?P<year>\d{4})").groupindex == {"year": 1}
    assert [f.start for f in find_all(r"\bEUR\b", "EURO EUR", limit=5)] == [5]


def test_the_first_group_is_the_value_when_it_took_part() -> None:
    text = "Invoice No INV-42, see INV-"
    assert list(find_all(r"INV-(\d+)?", text, limit=5)) == [
        Found(15, 17, "42"),
        Found(23, 27, "INV-"),  # group 1 did not take part: the whole match
    ]
    assert [f.text for f in find_all(r"\d", "1 2 3 4", limit=2)] == ["1", "2"]


def test_offsets_count_characters_not_bytes() -> None:
    (found,) = find_all(r"(\d+)", "Größe € 12", limit=1)
    assert (found.start, found.end, found.text) == (8, 10, "12")


def test_perl_classes_are_ascii_and_unicode_classes_reach_the_rest() -> None:
    assert not full_match(r"\d+", "٣٤")
    assert full_match(r"\pN+", "٣٤")
    assert full_match(r"(?i)straße", "STRAßE")
