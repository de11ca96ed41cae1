"""The facts of a generated document, drawn from a seeded random source, and its ground truth.

Ground truth is normalised the way labels of real documents are: ISO dates, decimal strings
with two places for amounts, free text verbatim as printed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

CENT = Decimal("0.01")

_VENDOR_WORDS = [
    "Northwind",
    "Alder",
    "Bluebird",
    "Cobalt",
    "Granite",
    "Harbor",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Meridian",
    "Nimbus",
    "Orchard",
    "Pioneer",
    "Quarry",
    "Riverside",
    "Summit",
    "Tidewater",
    "Union",
    "Vantage",
    "Willow",
]
_VENDOR_KINDS = [
    "Supplies",
    "Consulting",
    "Logistics",
    "Software",
    "Hardware",
    "Print",
    "Studio",
    "Foods",
    "Engineering",
    "Trading",
]
_VENDOR_FORMS = ("Ltd", "GmbH", "Inc.", "B.V.", "S.A.", "LLC", "Sdn Bhd", "AG")
_STREETS = [
    "Market",
    "Mill",
    "Station",
    "Church",
    "Harbour",
    "Park",
    "Bridge",
    "Elm",
    "Oak",
    "Cedar",
    "Victoria",
    "King",
]
_STREET_KINDS = ("Street", "Road", "Avenue", "Lane", "Way")
_CITIES = (
    ("10115", "Berlin"),
    ("75008", "Paris"),
    ("1012 AB", "Amsterdam"),
    ("SW1A 2AA", "London"),
    ("8001", "Zurich"),
    ("50450", "Kuala Lumpur"),
    ("02108", "Boston"),
    ("20121", "Milan"),
)
_ITEMS = (
    "Printer paper A4, 500 sheets",
    "Consulting services",
    "Annual software licence",
    "Laptop docking station",
    "Cloud storage subscription (12 months)",
    "On-site installation and configuration of network equipment",
    "Ergonomic office chair",
    "Translation of technical documentation into German and French",
    "Toner cartridge, black",
    "Delivery charge",
    "Maintenance contract, quarterly",
    "USB-C cable 2 m",
)
_SHOP_ITEMS = (
    "Coffee",
    "Croissant",
    "Mineral water",
    "Sandwich",
    "Notebook A5",
    "Ballpoint pen",
    "Bread roll",
    "Orange juice",
    "Batteries AA",
    "Chocolate bar",
)


def money(value: Decimal) -> str:
    return str(value.quantize(CENT, rounding=ROUND_HALF_UP))


@dataclass(frozen=True, slots=True)
class LineItem:
    description: str
    quantity: Decimal
    unit_price: Decimal

    @property
    def amount(self) -> Decimal:
        return (self.quantity * self.unit_price).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True, slots=True)
class Party:
    name: str
    street: str
    city: str  # postcode and city

    @property
    def address(self) -> str:
        return f"{self.street}, {self.city}"


@dataclass(frozen=True, slots=True)
class Invoice:
    number: str
    issued: date
    due: date | None
    vendor: Party
    customer: Party
    currency: str
    tax_rate: Decimal
    items: tuple[LineItem, ...]
    subtotal: Decimal
    tax: Decimal
    total: Decimal

    def ground_truth(self, *, with_items: bool) -> dict[str, Any]:
        fields: dict[str, str] = {
            "invoice_number": self.number,
            "invoice_date": self.issued.isoformat(),
            "vendor_name": self.vendor.name,
            "subtotal": money(self.subtotal),
            "tax": money(self.tax),
            "total": money(self.total),
            "currency": self.currency,
        }
        if self.due is not None:
            fields["due_date"] = self.due.isoformat()
        truth: dict[str, Any] = {"fields": fields}
        if with_items:
            truth["line_items"] = [
                {
                    "description": item.description,
                    "quantity": format(item.quantity.normalize(), "f"),
                    "unit_price": money(item.unit_price),
                    "amount": money(item.amount),
                }
                for item in self.items
            ]
        return truth


@dataclass(frozen=True, slots=True)
class Receipt:
    shop: Party
    when: date
    time: str
    items: tuple[LineItem, ...]
    total: Decimal

    def ground_truth(self) -> dict[str, Any]:
        return {
            "fields": {
                "company": self.shop.name,
                "date": self.when.isoformat(),
                "address": self.shop.address,
                "total": money(self.total),
            }
        }


def party(rng: random.Random) -> Party:
    name = f"{rng.choice(_VENDOR_WORDS)} {rng.choice(_VENDOR_KINDS)} {rng.choice(_VENDOR_FORMS)}"
    street = f"{rng.randint(1, 240)} {rng.choice(_STREETS)} {rng.choice(_STREET_KINDS)}"
    postcode, city = rng.choice(_CITIES)
    return Party(name, street, f"{postcode} {city}")


def _day(rng: random.Random) -> date:
    return date(2024, 1, 1) + timedelta(days=rng.randint(0, 3 * 365))


def _price(rng: random.Random, low: int, high: int) -> Decimal:
    return Decimal(rng.randint(low * 100, high * 100)) / 100


def invoice(rng: random.Random, *, currency: str, items: int, number: str) -> Invoice:
    issued = _day(rng)
    due = issued + timedelta(days=rng.choice((14, 30, 45))) if rng.random() < 0.8 else None
    lines = tuple(
        LineItem(
            rng.choice(_ITEMS),
            Decimal(rng.choice(("1", "2", "3", "5", "10", "12", "1.5", "0.5"))),
            _price(rng, 2, 2400),
        )
        for _ in range(max(1, items))
    )
    subtotal = sum((line.amount for line in lines), Decimal("0"))
    rate = Decimal(rng.choice(("0.07", "0.19", "0.2", "0.21", "0.08", "0.06")))
    tax = (subtotal * rate).quantize(CENT, rounding=ROUND_HALF_UP)
    return Invoice(
        number,
        issued,
        due,
        party(rng),
        party(rng),
        currency,
        rate,
        lines,
        subtotal,
        tax,
        subtotal + tax,
    )


def receipt(rng: random.Random) -> Receipt:
    lines = tuple(
        LineItem(rng.choice(_SHOP_ITEMS), Decimal(rng.randint(1, 3)), _price(rng, 1, 40))
        for _ in range(rng.randint(2, 6))
    )
    total = sum((line.amount for line in lines), Decimal("0"))
    clock = f"{rng.randint(7, 21):02d}:{rng.randint(0, 59):02d}"
    return Receipt(party(rng), _day(rng), clock, lines, total)


def invoice_number(rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0:
        return f"INV-{rng.randint(2024, 2026)}-{rng.randint(1, 99999):05d}"
    if style == 1:
        return str(rng.randint(10_000_000, 99_999_999))
    if style == 2:
        return f"{rng.choice('ABCDEFGH')}{rng.choice('KLMNPRST')}{rng.randint(100000, 999999)}"
    return f"{rng.randint(2024, 2026)}/{rng.randint(1, 9999):04d}"
