"""Three till-receipt layouts on narrow paper: the shop's name and address at the top."""

from __future__ import annotations

from collections.abc import Callable

from docflow.corpus.content import Receipt
from docflow.corpus.invoices import Drawn, Printed
from docflow.corpus.pen import Pen
from docflow.corpus.styles import MoneyStyle, format_date


def _height(receipt: Receipt) -> float:
    return 95.0 + 9.0 * len(receipt.items)


def _address(receipt: Receipt) -> tuple[str, str]:
    # printed over two lines; joined with a space they read exactly as the ground truth
    return f"{receipt.shop.street},", receipt.shop.city


def till(receipt: Receipt, money: MoneyStyle, dates: str) -> Drawn:
    """Centred monospace header, quantity x item lines, TOTAL with the currency."""
    pen, printed = Pen(80, _height(receipt), "Courier"), Printed()
    street, city = _address(receipt)
    pen.text(40, 10, receipt.shop.name, size=8.5, font="Courier-Bold", align="center")
    pen.text(40, 14.5, street, size=8, align="center")
    pen.text(40, 18.5, city, size=8, align="center")
    day = format_date(receipt.when, dates)
    pen.text(5, 27, f"Date: {day}  {receipt.time}", size=8)
    pen.rule(5, 30, 75)
    y = 35.0
    bare = MoneyStyle(money.decimal_comma, "")
    for item in receipt.items:
        pen.text(5, y, f"{item.quantity:f} x {item.description}", size=8)
        pen.text(75, y, bare.format(item.amount), size=8, align="right")
        y += 5
    pen.rule(5, y - 2, 75)
    total = money.format(receipt.total)
    pen.text(5, y + 4, "TOTAL", size=9, font="Courier-Bold")
    pen.text(75, y + 4, total, size=9, font="Courier-Bold", align="right")
    pen.text(40, y + 16, "THANK YOU - PLEASE COME AGAIN", size=7, align="center")
    printed.update(company=[receipt.shop.name], address=[street, city], date=[day], total=[total])
    return Drawn(pen.finish(), printed)


def card(receipt: Receipt, money: MoneyStyle, dates: str) -> Drawn:
    """Left-aligned sans header, unlabelled date and time, items with unit prices, Grand Total."""
    pen, printed = Pen(80, _height(receipt) + 6, "Helvetica"), Printed()
    street, city = _address(receipt)
    pen.text(5, 10, receipt.shop.name, size=10, font="Helvetica-Bold")
    pen.text(5, 14.5, street, size=7.5)
    pen.text(5, 18.5, city, size=7.5)
    day = format_date(receipt.when, dates)
    pen.text(5, 26, f"{day} {receipt.time}", size=7.5)
    pen.text(75, 26, "Till 2", size=7.5, align="right")
    pen.text(5, 33, "Item", size=7.5, font="Helvetica-Bold")
    pen.text(48, 33, "Qty", size=7.5, font="Helvetica-Bold", align="right")
    pen.text(75, 33, "Amount", size=7.5, font="Helvetica-Bold", align="right")
    y = 38.5
    bare = MoneyStyle(money.decimal_comma, "")
    for item in receipt.items:
        pen.text(5, y, item.description, size=7.5)
        pen.text(48, y, f"{item.quantity:f}", size=7.5, align="right")
        pen.text(75, y, bare.format(item.amount), size=7.5, align="right")
        y += 5
    total = money.format(receipt.total)
    pen.text(5, y + 5, "Grand Total", size=9, font="Helvetica-Bold")
    pen.text(75, y + 5, total, size=9, font="Helvetica-Bold", align="right")
    pen.text(5, y + 13, "Paid by card. Keep this receipt.", size=7)
    printed.update(company=[receipt.shop.name], address=[street, city], date=[day], total=[total])
    return Drawn(pen.finish(), printed)


def cafe(receipt: Receipt, money: MoneyStyle, dates: str) -> Drawn:
    """Serif header, 'Dated' label, amounts with a symbol, 'Amount Due'."""
    pen, printed = Pen(76, _height(receipt), "Times-Roman"), Printed()
    street, city = _address(receipt)
    pen.text(38, 11, receipt.shop.name, size=10, font="Times-Bold", align="center")
    pen.text(38, 16, street, size=8, align="center")
    pen.text(38, 20, city, size=8, align="center")
    day = format_date(receipt.when, dates)
    pen.text(5, 29, f"Dated {day}", size=8.5)
    pen.text(71, 29, receipt.time, size=8.5, align="right")
    y = 37.0
    for item in receipt.items:
        pen.text(5, y, f"{item.description} ({item.quantity:f})", size=8.5)
        pen.text(71, y, money.format(item.amount), size=8.5, align="right")
        y += 5.5
    pen.rule(5, y - 2.5, 71)
    total = money.format(receipt.total)
    pen.text(5, y + 3.5, "Amount Due", size=9.5, font="Times-Bold")
    pen.text(71, y + 3.5, total, size=9.5, font="Times-Bold", align="right")
    printed.update(company=[receipt.shop.name], address=[street, city], date=[day], total=[total])
    return Drawn(pen.finish(), printed)


ReceiptLayout = Callable[[Receipt, MoneyStyle, str], Drawn]
