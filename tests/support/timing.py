"""Bounding the work of a call by the CPU time it spends, not by the wall clock of a shared,
noisy machine: a call that must end "well under a second" is held to that in this thread's CPU
time, and to five times that on the wall clock, so waiting instead of working fails too."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def within(seconds: float) -> Iterator[None]:
    cpu, wall = time.thread_time(), time.perf_counter()
    yield
    spent, waited = time.thread_time() - cpu, time.perf_counter() - wall
    assert spent < seconds, f"{spent:.3f} s of CPU, at most {seconds} s allowed"
    assert waited < 5 * seconds, f"{waited:.3f} s on the wall clock, at most {5 * seconds} s"
