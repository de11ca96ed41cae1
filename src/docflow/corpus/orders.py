"""Generate a labelled set of purchase orders: a second kind of document for evaluations.

Orders come from a few recurring issuers (`ISSUERS` buyers per seed), as a business receives
orders from its regular customers: each issuer prints every order in the same layout
(`order_layouts`), money and date style, and numbers its orders its own way; the supplier,
dates, items and amounts change from order to order. Document i is drawn from its own random
source seeded by (seed, i), so it is the same whatever the count; files are named
`po-<i>-<layout>`, so file-name order is generation order.

Labels (`<name>.json`, the format `docflow eval --dataset` reads) hold `po_number`,
`order_date`, `delivery_date` (when printed), `buyer`, `supplier`, `total` and `currency`; the
workflow `examples/purchase_order.yaml` names the same fields.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from docflow.corpus import content
from docflow.corpus.content import Party, money
from docflow.corpus.generate import KINDS, _seed
from docflow.corpus.invoices import Printed
from docflow.corpus.order_layouts import ORDER_LAYOUTS, Order, OrderStyle
from docflow.corpus.scan import LEVELS, scan
from docflow.corpus.styles import MoneyStyle

ISSUERS = 6
_MONIES = (
    ("USD", MoneyStyle(False, "$")),
    ("EUR", MoneyStyle(True, "€", mark_after=True)),
    ("GBP", MoneyStyle(False, "£")),
    ("CHF", MoneyStyle(False, "CHF")),
    ("EUR", MoneyStyle(True, "")),
    ("USD", MoneyStyle(False, "", thousands=False)),
)
_DATES = ("dmy_slash", "dmy_dot", "iso", "d_month_y", "month_d_y", "d_mon_y", "dmy_dash")


@dataclass(frozen=True, slots=True)
class Issuer:
    party: Party
    layout: str
    style: OrderStyle
    currency: str
    numbering: int  # which of the order-number shapes it uses


@dataclass(frozen=True, slots=True)
class GeneratedOrder:
    name: str
    layout: str
    truth: dict[str, Any]
    printed: Printed
    pdf: bytes


def issuers(seed: int) -> tuple[Issuer, ...]:
    """The recurring buyers of the set of `seed`; issuer i prints in layout i mod 3."""
    rng = random.Random(_seed(seed, 0, "order-issuers"))
    layouts = list(ORDER_LAYOUTS)
    chosen = []
    for i in range(ISSUERS):
        currency, style = rng.choice(_MONIES)
        dates = rng.choice(_DATES)
        chosen.append(
            Issuer(
                content.party(rng),
                layouts[i % len(layouts)],
                OrderStyle(style, dates),
                currency,
                rng.randrange(4),
            )
        )
    return tuple(chosen)


def order_number(rng: random.Random, numbering: int) -> str:
    if numbering == 0:
        return f"PO-{rng.randint(2024, 2026)}-{rng.randint(1, 99999):05d}"
    if numbering == 1:
        return f"45{rng.randint(0, 99_999_999):08d}"
    if numbering == 2:
        return f"PUR/{rng.randint(2024, 2026)}/{rng.randint(1, 9999):04d}"
    return f"{rng.choice('BCDFGH')}{rng.choice('KLMNPR')}-{rng.randint(100000, 999999)}"


def make_order(seed: int, index: int, pool: Sequence[Issuer] | None = None) -> GeneratedOrder:
    """Order `index` of the set of `seed`: its PDF, label and printed values."""
    issuer_rng = random.Random(_seed(seed, index, "order-issuer"))
    issuer = (pool or issuers(seed))[issuer_rng.randrange(ISSUERS)]
    rng = random.Random(_seed(seed, index, "order-content"))
    number = order_number(rng, issuer.numbering)
    basis = content.invoice(rng, currency=issuer.currency, items=rng.randint(1, 4), number=number)
    deliver_by = basis.issued + timedelta(days=rng.choice((7, 10, 14, 21, 30)))
    order = Order(
        number=number,
        ordered=basis.issued,
        deliver_by=deliver_by if rng.random() < 0.8 else None,
        buyer=issuer.party,
        supplier=basis.vendor,
        currency=issuer.currency,
        items=basis.items,
        subtotal=basis.subtotal,
        tax=basis.tax,
        total=basis.total,
    )
    drawn = ORDER_LAYOUTS[issuer.layout](order, issuer.style)
    name = f"po-{index:04d}-{issuer.layout}"
    return GeneratedOrder(name, issuer.layout, ground_truth(order), drawn.printed, drawn.pdf)


def ground_truth(order: Order) -> dict[str, Any]:
    fields = {
        "po_number": order.number,
        "order_date": order.ordered.isoformat(),
        "buyer": order.buyer.name,
        "supplier": order.supplier.name,
        "total": money(order.total),
        "currency": order.currency,
    }
    if order.deliver_by is not None:
        fields["delivery_date"] = order.deliver_by.isoformat()
    return {"fields": fields, "source": "generated purchase order"}


def generate_orders(
    out: Path,
    *,
    count: int,
    seed: int,
    kinds: Sequence[str] = ("pdf",),
    dpi: int = 300,
    degradation: str = "mild",
) -> list[GeneratedOrder]:
    """Write `count` orders into `out`: `<name>.pdf` and/or `<name>.jpg`, and `<name>.json`."""
    unknown = set(kinds) - set(KINDS)
    if unknown or not kinds:
        raise ValueError(f"kinds must be among {', '.join(KINDS)}")
    out.mkdir(parents=True, exist_ok=True)
    pool = issuers(seed)
    written = []
    for index in range(count):
        order = make_order(seed, index, pool)
        if "pdf" in kinds:
            (out / f"{order.name}.pdf").write_bytes(order.pdf)
        if "scan" in kinds:
            rng = np.random.default_rng(_seed(seed, index, f"order-scan:{dpi}:{degradation}"))
            image = scan(order.pdf, dpi=dpi, level=LEVELS[degradation], rng=rng)
            (out / f"{order.name}.jpg").write_bytes(image)
        label = json.dumps(order.truth, indent=2, ensure_ascii=False) + "\n"
        (out / f"{order.name}.json").write_text(label, encoding="utf-8")
        written.append(order)
    return written
