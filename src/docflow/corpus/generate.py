"""Generate a labelled corpus: every document as a text PDF and/or a scan, with `<name>.json`.

Layouts are used in turn (document i gets layout i mod 7), so every layout is represented in
any corpus of seven documents or more. Each document draws from its own random source seeded by
(seed, index), so document 12 is the same whatever the count.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from docflow.corpus import content, invoices, receipts
from docflow.corpus.invoices import Drawn, InvoiceStyle, Printed
from docflow.corpus.scan import LEVELS, scan
from docflow.corpus.styles import MoneyStyle

KINDS = ("pdf", "scan")
_EUR = MoneyStyle(True, "€", mark_after=True)

# name -> (currency, money style) choices and date styles
INVOICE_LAYOUTS: dict[
    str, tuple[invoices.InvoiceLayout, list[tuple[str, MoneyStyle]], list[str]]
] = {
    "classic": (
        invoices.classic,
        [
            ("USD", MoneyStyle(False, "")),
            ("EUR", MoneyStyle(False, "")),
            ("GBP", MoneyStyle(False, "")),
        ],
        ["dmy_slash", "d_month_y"],
    ),
    "european": (
        invoices.european,
        [("EUR", _EUR), ("CHF", MoneyStyle(True, "CHF", mark_after=True))],
        ["dmy_dot", "dmy_dash"],
    ),
    "minimal": (
        invoices.minimal,
        [("USD", MoneyStyle(False, "$")), ("GBP", MoneyStyle(False, "£"))],
        ["month_d_y"],
    ),
    "modern": (
        invoices.modern,
        [
            ("GBP", MoneyStyle(False, "£")),
            ("EUR", MoneyStyle(False, "€")),
            ("USD", MoneyStyle(False, "$")),
        ],
        ["d_month_y", "iso"],
    ),
}
RECEIPT_LAYOUTS: dict[str, tuple[receipts.ReceiptLayout, list[MoneyStyle], list[str]]] = {
    "till": (receipts.till, [MoneyStyle(False, "RM", thousands=False)], ["dmy_slash", "dmy_dash"]),
    "card": (receipts.card, [MoneyStyle(True, "EUR", mark_after=True)], ["dmy_dot", "iso"]),
    "cafe": (
        receipts.cafe,
        [MoneyStyle(False, "$"), MoneyStyle(False, "£")],
        ["d_mon_y", "month_d_y"],
    ),
}
LAYOUTS = (*INVOICE_LAYOUTS, *RECEIPT_LAYOUTS)


@dataclass(frozen=True, slots=True)
class GeneratedDocument:
    name: str
    layout: str
    truth: dict[str, Any]
    printed: Printed
    pdf: bytes


def _seed(seed: int, index: int, purpose: str) -> int:
    digest = hashlib.sha256(f"{seed}:{index}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def make_document(seed: int, index: int) -> GeneratedDocument:
    """Document `index` of the corpus of `seed`: its PDF, ground truth and printed values."""
    rng = random.Random(_seed(seed, index, "content"))
    layout = LAYOUTS[index % len(LAYOUTS)]
    name = f"{layout}-{index:04d}"
    if layout in INVOICE_LAYOUTS:
        draw, monies, dates = INVOICE_LAYOUTS[layout]
        currency, money = rng.choice(monies)
        with_items = layout != "minimal" and (layout != "european" or rng.random() < 0.7)
        number = content.invoice_number(rng)
        inv = content.invoice(rng, currency=currency, items=rng.randint(1, 5), number=number)
        drawn: Drawn = draw(inv, InvoiceStyle(money, rng.choice(dates), with_items))
        truth = inv.ground_truth(with_items=with_items)
    else:
        draw_receipt, styles, dates = RECEIPT_LAYOUTS[layout]
        receipt = content.receipt(rng)
        drawn = draw_receipt(receipt, rng.choice(styles), rng.choice(dates))
        truth = receipt.ground_truth()
    return GeneratedDocument(name, layout, truth, drawn.printed, drawn.pdf)


def generate_corpus(
    out: Path,
    *,
    count: int,
    seed: int,
    kinds: Sequence[str] = KINDS,
    dpi: int = 300,
    degradation: str = "mild",
) -> list[GeneratedDocument]:
    """Write `count` documents into `out`: `<name>.pdf` and/or `<name>.jpg`, and `<name>.json`."""
    unknown = set(kinds) - set(KINDS)
    if unknown or not kinds:
        raise ValueError(f"kinds must be among {', '.join(KINDS)}")
    level = LEVELS[degradation]
    out.mkdir(parents=True, exist_ok=True)
    documents = []
    for index in range(count):
        document = make_document(seed, index)
        if "pdf" in kinds:
            (out / f"{document.name}.pdf").write_bytes(document.pdf)
        if "scan" in kinds:
            rng = np.random.default_rng(_seed(seed, index, f"scan:{dpi}:{degradation}"))
            (out / f"{document.name}.jpg").write_bytes(
                scan(document.pdf, dpi=dpi, level=level, rng=rng)
            )
        label = json.dumps(document.truth, indent=2, ensure_ascii=False) + "\n"
        (out / f"{document.name}.json").write_text(label, encoding="utf-8")
        documents.append(document)
    return documents
