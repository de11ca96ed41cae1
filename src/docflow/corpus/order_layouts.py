"""Three purchase-order layouts: where the order's number, dates, parties and total are
printed, in which words, fonts, money and date styles.

A purchase order is issued by the buyer (its letterhead) to a supplier. Each layout draws an
`Order` and returns the PDF with the printed form of every labelled value (`Drawn.printed`), so
tests can check that the text layer says what the label claims.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from docflow.corpus.content import LineItem, Party
from docflow.corpus.invoices import Drawn, Printed
from docflow.corpus.pen import Pen
from docflow.corpus.styles import MoneyStyle, format_date, format_quantity


@dataclass(frozen=True, slots=True)
class OrderStyle:
    """How one issuer prints its orders: money, dates; the same on every order it sends."""

    money: MoneyStyle
    dates: str


@dataclass(frozen=True, slots=True)
class Order:
    number: str
    ordered: date
    deliver_by: date | None
    buyer: Party
    supplier: Party
    currency: str
    items: tuple[LineItem, ...]
    subtotal: Decimal
    tax: Decimal
    total: Decimal


def _values(order: Order, style: OrderStyle, printed: Printed) -> dict[str, str]:
    """The printed header values, recorded under their label names."""
    shown = {
        "po_number": order.number,
        "order_date": format_date(order.ordered, style.dates),
        "buyer": order.buyer.name,
        "supplier": order.supplier.name,
        "total": style.money.format(order.total),
    }
    if order.deliver_by is not None:
        shown["delivery_date"] = format_date(order.deliver_by, style.dates)
    printed.update({name: [value] for name, value in shown.items()})
    printed["currency"] = [order.currency]
    return shown


def _items(
    pen: Pen, order: Order, style: OrderStyle, top: float, headings: tuple[str, ...]
) -> float:
    """An item table (item, quantity, unit price, line amount); the y below it."""
    xs = (20.0, 130.0, 160.0, 190.0)
    pen.text(xs[0], top, headings[0], font=pen.bold)
    for x, heading in zip(xs[1:], headings[1:], strict=True):
        pen.text(x, top, heading, align="right", font=pen.bold)
    pen.rule(20, top + 2, 190)
    bare = MoneyStyle(style.money.decimal_comma, "", thousands=style.money.thousands)
    y = top + 7
    for item in order.items:
        quantity = format_quantity(item.quantity, decimal_comma=style.money.decimal_comma)
        pen.text(xs[0], y, item.description)
        pen.text(xs[1], y, quantity, align="right")
        pen.text(xs[2], y, bare.format(item.unit_price), align="right")
        pen.text(xs[3], y, bare.format(item.amount), align="right")
        y += 6.5
    pen.rule(20, y - 3.5, 190)
    return y + 4


def formal(order: Order, style: OrderStyle) -> Drawn:
    """Letterhead top left, a boxed row of header cells (label above value), vendor and
    ship-to blocks side by side, totals bottom right."""
    pen, printed = Pen(210, 297, "Helvetica"), Printed()
    shown = _values(order, style, printed)
    pen.text(20, 20, order.buyer.name, size=15, font="Helvetica-Bold")
    pen.text(20, 26, order.buyer.street, size=8.5)
    pen.text(20, 30, order.buyer.city, size=8.5)
    pen.text(190, 24, "PURCHASE ORDER", size=18, font="Helvetica-Bold", align="right")
    cells = [("P.O. Number", "po_number"), ("Order Date", "order_date")]
    if "delivery_date" in shown:
        cells.append(("Delivery Date", "delivery_date"))
    for i, (label, key) in enumerate(cells):
        pen.box(20 + i * 57, 40, 57, 14)
        pen.text(23 + i * 57, 45, label, size=7.5, font="Helvetica-Bold")
        pen.text(23 + i * 57, 51, shown[key], size=10)
    pen.text(20, 66, "Vendor", font="Helvetica-Bold")
    pen.text(115, 66, "Ship To", font="Helvetica-Bold")
    blocks = ((20, order.supplier), (115, order.buyer))
    for x, party in blocks:
        for j, line in enumerate((party.name, party.street, party.city)):
            pen.text(x, 71.5 + j * 4.5, line)
    y = _items(pen, order, style, 96, ("Item", "Qty", "Unit Cost", "Extended"))
    rows = (
        ("Subtotal", style.money.format(order.subtotal)),
        ("Sales Tax", style.money.format(order.tax)),
        ("Order Total", shown["total"]),
    )
    for i, (label, value) in enumerate(rows):
        font = "Helvetica-Bold" if i == 2 else None
        pen.text(155, y + i * 6, label, font=font, align="right")
        pen.text(190, y + i * 6, value, font=font, align="right")
    pen.text(20, 266, f"All prices in {order.currency}.", size=8)
    pen.text(20, 272, "Quote the P.O. number on every invoice and delivery note.", size=8)
    return Drawn(pen.finish(), printed)


def ledger(order: Order, style: OrderStyle) -> Drawn:
    """Centred letterhead in capitals, a column of label/value pairs on the left, the title on
    the right, the amount payable with its currency code after it."""
    pen, printed = Pen(210, 297, "Times-Roman"), Printed()
    shown = _values(order, style, printed)
    pen.text(105, 18, order.buyer.name.upper(), size=14, font="Times-Bold", align="center")
    pen.text(105, 23.5, order.buyer.address, size=9, align="center")
    pen.rule(20, 27, 190)
    pen.text(190, 42, "Order", size=22, font="Times-Bold", align="right")
    pairs = [
        ("Order Ref", shown["po_number"]),
        ("Issued On", shown["order_date"]),
        ("Deliver By", shown.get("delivery_date", "on receipt")),
        ("Supplier", shown["supplier"]),
        ("Ordered By", order.buyer.name),
    ]
    for i, (label, value) in enumerate(pairs):
        pen.text(20, 38 + i * 6, label, font="Times-Bold")
        pen.text(50, 38 + i * 6, value)
    y = _items(pen, order, style, 82, ("Description", "Units", "Price", "Amount"))
    net = style.money.format(order.subtotal)
    tax = style.money.format(order.tax)
    pen.text(120, y, "Net")
    pen.text(190, y, net, align="right")
    pen.text(120, y + 6, "Tax")
    pen.text(190, y + 6, tax, align="right")
    pen.text(120, y + 13, "Amount Payable", font="Times-Bold")
    pen.text(190, y + 13, f"{shown['total']} {order.currency}", font="Times-Bold", align="right")
    return Drawn(pen.finish(), printed)


def memo(order: Order, style: OrderStyle) -> Drawn:
    """Typewriter memo: From/To lines, number and date on one line, items as sentences."""
    pen, printed = Pen(210, 297, "Courier"), Printed()
    shown = _values(order, style, printed)
    pen.text(20, 20, "PURCHASE ORDER", size=13, font="Courier-Bold")
    pen.text(20, 30, f"From: {order.buyer.name}")
    pen.text(20, 35, f"      {order.buyer.address}", size=8)
    pen.text(20, 42, f"To:   {order.supplier.name}")
    pen.text(20, 52, f"Order No.: {shown['po_number']}")
    pen.text(110, 52, f"Date: {shown['order_date']}")
    if "delivery_date" in shown:
        pen.text(20, 58, f"Delivery required by: {shown['delivery_date']}")
    bare = MoneyStyle(style.money.decimal_comma, "", thousands=style.money.thousands)
    y = 70.0
    for item in order.items:
        quantity = format_quantity(item.quantity, decimal_comma=style.money.decimal_comma)
        line = f"{quantity} x {item.description} @ {bare.format(item.unit_price)}"
        pen.text(20, y, line, size=8.5)
        pen.text(190, y, bare.format(item.amount), size=8.5, align="right")
        y += 5
    pen.rule(20, y, 190)
    pen.text(20, y + 7, f"Grand Total ({order.currency})", font="Courier-Bold")
    pen.text(190, y + 7, shown["total"], font="Courier-Bold", align="right")
    pen.text(20, y + 16, "Goods to be delivered to the address above.", size=8)
    return Drawn(pen.finish(), printed)


OrderLayout = Callable[[Order, OrderStyle], Drawn]
ORDER_LAYOUTS: dict[str, OrderLayout] = {"formal": formal, "ledger": ledger, "memo": memo}
