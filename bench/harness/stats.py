"""Figures measured over repeated runs: median and spread, with a target where there is one."""

from __future__ import annotations

import operator
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le}


@dataclass(frozen=True)
class Target:
    """A bound the median must meet: `op` is ">=" or "<="."""

    op: str
    value: float

    def met(self, measured: float) -> bool:
        return _OPS[self.op](measured, self.value)

    def __str__(self) -> str:
        return f"{self.op} {self.value:g}"


def at_least(value: float) -> Target:
    return Target(">=", value)


def at_most(value: float) -> Target:
    return Target("<=", value)


def summary(values: list[float]) -> dict[str, float]:
    """Median, min, max and the quartiles (equal to the median for one value)."""
    ordered = sorted(values)
    median = statistics.median(ordered)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = median
    return {"median": median, "min": ordered[0], "max": ordered[-1], "q1": q1, "q3": q3}


@dataclass
class Figure:
    """One measured quantity of a scenario, one value per repeat."""

    name: str
    unit: str
    label: str
    target: Target | None = None
    values: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def met(self) -> bool | None:
        return None if self.target is None or not self.values else self.target.met(self.median)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"unit": self.unit, "label": self.label, "n": len(self.values)}
        if self.values:
            body.update(summary(self.values))
            body["values"] = [round(v, 4) for v in self.values]
        if self.target is not None:
            body["target"] = str(self.target)
            body["met"] = self.met
        return body


class Figures:
    """The figures of one scenario, in the order they were declared."""

    def __init__(self) -> None:
        self.items: dict[str, Figure] = {}

    def declare(self, name: str, unit: str, label: str, target: Target | None = None) -> Figure:
        """Declare a figure (once); later `add` calls append its values."""
        if name not in self.items:
            self.items[name] = Figure(name, unit, label, target)
        return self.items[name]

    def add(self, name: str, value: float) -> None:
        self.items[name].values.append(float(value))

    def to_json(self) -> dict[str, Any]:
        return {name: f.to_json() for name, f in self.items.items() if f.values}


def percentile(values: list[float], share: float) -> float:
    """The `share` (0..1) percentile of `values`, by linear interpolation."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = share * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
