"""Prefixed, time-ordered ids."""

from __future__ import annotations

import threading

from docflow.kit import ids


def test_ids_carry_their_prefix_and_a_ulid() -> None:
    value = ids.new_id(ids.BATCH)
    assert ids.has_prefix(value, "bat")
    assert not ids.has_prefix(value, "doc")
    assert not ids.has_prefix("bat_short", "bat")
    assert len(value) == len("bat_") + ids.ULID_LENGTH
    assert set(value[4:]) <= set("0123456789abcdefghjkmnpqrstvwxyz")


def test_ids_increase_strictly_even_within_a_millisecond() -> None:
    made = [ids.new_id(ids.DOCUMENT) for _ in range(2000)]
    assert made == sorted(made) and len(set(made)) == len(made)


def test_ids_stay_unique_across_threads() -> None:
    made: list[str] = []

    def work() -> None:
        made.extend(ids.new_id("x") for _ in range(500))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 2000
