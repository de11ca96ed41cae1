"""Four invoice layouts: different positions, label wordings, fonts, money and date styles.

Each layout draws an `Invoice` and returns the PDF with the printed form of every labelled
value, so tests can check that the text layer really says what the ground truth claims.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from docflow.corpus.content import Invoice, LineItem
from docflow.corpus.pen import Pen
from docflow.corpus.styles import MoneyStyle, format_date, format_quantity

Printed = dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class InvoiceStyle:
    money: MoneyStyle
    dates: str
    with_items: bool


@dataclass(frozen=True, slots=True)
class Drawn:
    pdf: bytes
    printed: Printed


def _header_values(inv: Invoice, style: InvoiceStyle, printed: Printed) -> list[tuple[str, str]]:
    issued = format_date(inv.issued, style.dates)
    printed.update(
        invoice_number=[inv.number], invoice_date=[issued], vendor_name=[inv.vendor.name]
    )
    rows = [(inv.number, "number"), (issued, "issued")]
    if inv.due is not None:
        due = format_date(inv.due, style.dates)
        printed["due_date"] = [due]
        rows.append((due, "due"))
    return rows


def _totals(inv: Invoice, style: InvoiceStyle, printed: Printed) -> tuple[str, str, str]:
    values = tuple(style.money.format(v) for v in (inv.subtotal, inv.tax, inv.total))
    printed.update(subtotal=[values[0]], tax=[values[1]], total=[values[2]])
    return values  # type: ignore[return-value]


def _rate(inv: Invoice) -> str:
    return f"{(inv.tax_rate * 100).normalize():f}%"


def _items(
    pen: Pen,
    items: tuple[LineItem, ...],
    style: InvoiceStyle,
    top: float,
    columns: tuple[str, str, str, str],
    desc_width: float,
) -> float:
    """Draw a table (multi-line descriptions wrap); return the y below it."""
    xs = (20.0, 128.0, 160.0, 190.0)
    pen.text(xs[0], top, columns[0], font=pen.bold)
    for x, heading in zip(xs[1:], columns[1:], strict=True):
        pen.text(x, top, heading, align="right", font=pen.bold)
    pen.rule(20, top + 2, 190)
    y = top + 7
    comma = style.money.decimal_comma
    for item in items:
        lines = pen.wrap(item.description, desc_width)
        pen.text(xs[0], y, lines[0])
        pen.text(xs[1], y, format_quantity(item.quantity, decimal_comma=comma), align="right")
        bare = MoneyStyle(comma, "", thousands=style.money.thousands)
        pen.text(xs[2], y, bare.format(item.unit_price), align="right")
        pen.text(xs[3], y, bare.format(item.amount), align="right")
        for extra in lines[1:]:
            y += 4.2
            pen.text(xs[0], y, extra)
        y += 6.5
    pen.rule(20, y - 3.5, 190)
    return y + 4


def classic(inv: Invoice, style: InvoiceStyle) -> Drawn:
    """Vendor top left, label/value pairs on the right, table, totals bottom right."""
    pen, printed = Pen(210, 297, "Helvetica"), Printed()
    pen.text(20, 22, inv.vendor.name, size=16, font="Helvetica-Bold")
    pen.text(20, 28, inv.vendor.street)
    pen.text(20, 32.5, inv.vendor.city)
    pen.text(190, 42, "INVOICE", size=20, font="Helvetica-Bold", align="right")
    labels = {"number": "Invoice No:", "issued": "Invoice Date:", "due": "Due Date:"}
    for i, (value, key) in enumerate(_header_values(inv, style, printed)):
        pen.text(120, 52 + i * 5.5, labels[key])
        pen.text(190, 52 + i * 5.5, value, align="right")
    pen.text(20, 52, "Bill To:", font="Helvetica-Bold")
    for i, line in enumerate((inv.customer.name, inv.customer.street, inv.customer.city)):
        pen.text(20, 57.5 + i * 4.5, line)
    y = 85.0
    if style.with_items:
        y = _items(pen, inv.items, style, y, ("Description", "Qty", "Unit Price", "Amount"), 95)
    sub, tax, total = _totals(inv, style, printed)
    for i, (label, value) in enumerate(
        (("Subtotal", sub), (f"VAT {_rate(inv)}", tax), ("Total", total))
    ):
        font = "Helvetica-Bold" if label == "Total" else None
        pen.text(150, y + i * 6, label, font=font, align="right")
        pen.text(190, y + i * 6, value, font=font, align="right")
    pen.text(20, 270, f"All amounts in {inv.currency}. Thank you for your business.", size=8)
    printed["currency"] = [inv.currency]
    return Drawn(pen.finish(), printed)


def european(inv: Invoice, style: InvoiceStyle) -> Drawn:
    """Centred letterhead, labels above their values, comma decimals, totals labelled in full."""
    pen, printed = Pen(210, 297, "Times-Roman"), Printed()
    pen.text(105, 20, inv.vendor.name, size=18, font="Times-Bold", align="center")
    pen.text(105, 26, f"{inv.vendor.street} | {inv.vendor.city}", size=9, align="center")
    pen.rule(20, 30, 190)
    pen.text(20, 45, "Invoice", size=22, font="Times-Bold")
    labels = {"number": "Invoice Number", "issued": "Date", "due": "Due Date"}
    for i, (value, key) in enumerate(_header_values(inv, style, printed)):
        pen.text(20 + i * 50, 56, labels[key], font="Times-Bold")
        pen.text(20 + i * 50, 61.5, value)
    pen.text(150, 56, "Customer", font="Times-Bold")
    for i, line in enumerate((inv.customer.name, inv.customer.street, inv.customer.city)):
        pen.text(150, 61.5 + i * 4.5, line)
    y = 90.0
    if style.with_items:
        y = _items(pen, inv.items, style, y, ("Item", "Quantity", "Unit price", "Amount"), 100)
    sub, tax, total = _totals(inv, style, printed)
    for i, (label, value) in enumerate(
        (("Net Total", sub), (f"Tax {_rate(inv)}", tax), ("Total Due", total))
    ):
        pen.text(120, y + i * 6, label, font="Times-Bold" if i == 2 else None)
        pen.text(190, y + i * 6, value, align="right", font="Times-Bold" if i == 2 else None)
    pen.text(20, y + 30, f"Currency: {inv.currency}")
    pen.text(105, 282, "Payment by bank transfer within the agreed term.", size=8, align="center")
    printed["currency"] = [inv.currency]
    return Drawn(pen.finish(), printed)


def minimal(inv: Invoice, style: InvoiceStyle) -> Drawn:
    """Typewriter look on US Letter, values below their labels, no line items."""
    pen, printed = Pen(215.9, 279.4, "Courier"), Printed()
    pen.text(22, 22, inv.vendor.name, size=13, font="Courier-Bold")
    pen.text(22, 27.5, f"{inv.vendor.street}, {inv.vendor.city}", size=9)
    labels = {"number": "Bill No", "issued": "Bill Date", "due": "Payment Due"}
    for i, (value, key) in enumerate(_header_values(inv, style, printed)):
        pen.text(22 + i * 58, 45, labels[key], font="Courier-Bold")
        pen.text(22 + i * 58, 50.5, value)
    pen.text(22, 66, f"Billed to: {inv.customer.name}")
    pen.text(22, 76, "For services rendered as agreed.")
    sub, tax, total = _totals(inv, style, printed)
    for i, (label, value) in enumerate(
        (("Subtotal:", sub), ("Sales Tax:", tax), ("Amount Due:", total))
    ):
        pen.text(120, 95 + i * 6, label)
        pen.text(194, 95 + i * 6, value, align="right")
    pen.text(22, 125, f"Currency: {inv.currency}")
    printed["currency"] = [inv.currency]
    return Drawn(pen.finish(), printed)


def modern(inv: Invoice, style: InvoiceStyle) -> Drawn:
    """Vendor top right, a boxed details panel, wrapped descriptions, grand total."""
    pen, printed = Pen(210, 297, "Helvetica"), Printed()
    pen.text(190, 20, inv.vendor.name, size=14, font="Helvetica-Bold", align="right")
    pen.text(190, 25.5, inv.vendor.street, size=8.5, align="right")
    pen.text(190, 29.5, inv.vendor.city, size=8.5, align="right")
    pen.text(20, 45, "TAX INVOICE", size=16, font="Helvetica-Bold")
    pen.box(118, 50, 72, 22)
    labels = {"number": "Inv #", "issued": "Date of Issue", "due": "Due By"}
    for i, (value, key) in enumerate(_header_values(inv, style, printed)):
        pen.text(121, 56 + i * 6, labels[key])
        pen.text(187, 56 + i * 6, value, align="right")
    pen.text(20, 56, "Invoice to", font="Helvetica-Bold")
    pen.text(20, 61.5, inv.customer.name)
    pen.text(20, 66, inv.customer.address, size=8.5)
    y = 88.0
    if style.with_items:
        y = _items(pen, inv.items, style, y, ("Description", "Qty", "Rate", "Line Total"), 60)
    sub, tax, total = _totals(inv, style, printed)
    for i, (label, value) in enumerate((("Sub Total", sub), ("Tax", tax), ("Grand Total", total))):
        pen.text(125, y + i * 6, label, font="Helvetica-Bold" if i == 2 else None)
        pen.text(190, y + i * 6, value, align="right", font="Helvetica-Bold" if i == 2 else None)
    pen.text(20, 280, f"Payable in {inv.currency} within the stated term.", size=8)
    printed["currency"] = [inv.currency]
    return Drawn(pen.finish(), printed)


InvoiceLayout = Callable[[Invoice, InvoiceStyle], Drawn]
