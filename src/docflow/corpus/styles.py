"""How amounts and dates are printed: the styles a generated document is drawn with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@dataclass(frozen=True, slots=True)
class MoneyStyle:
    """`1,234.56` (point) or `1.234,56` (comma); a symbol or code before or after the figure."""

    decimal_comma: bool
    mark: str  # "$", "€", "£", "RM", "EUR" ... or "" for a bare figure
    mark_after: bool = False
    thousands: bool = True

    def format(self, amount: Decimal) -> str:
        figure = format_figure(amount, decimal_comma=self.decimal_comma, thousands=self.thousands)
        if not self.mark:
            return figure
        if self.mark_after:
            return f"{figure} {self.mark}"
        glue = "" if self.mark in ("$", "£", "€") else " "
        return f"{self.mark}{glue}{figure}"


def format_figure(amount: Decimal, *, decimal_comma: bool, thousands: bool = True) -> str:
    """Two decimal places; thousands grouped with the separator the style does not use."""
    text = f"{amount:,.2f}" if thousands else f"{amount:.2f}"
    if decimal_comma:
        text = text.replace(",", "\x00").replace(".", ",").replace("\x00", ".")
    return text


def format_quantity(quantity: Decimal, *, decimal_comma: bool) -> str:
    text = format(quantity.normalize(), "f")
    return text.replace(".", ",") if decimal_comma else text


DATE_STYLES = ("dmy_slash", "dmy_dot", "iso", "d_month_y", "month_d_y", "d_mon_y", "dmy_dash")


def format_date(day: date, style: str) -> str:
    """Print `day` in one of DATE_STYLES; numeric styles are day first (unambiguous with DMY)."""
    month = MONTHS[day.month - 1]
    if style == "dmy_slash":
        return f"{day.day:02d}/{day.month:02d}/{day.year}"
    if style == "dmy_dot":
        return f"{day.day:02d}.{day.month:02d}.{day.year}"
    if style == "dmy_dash":
        return f"{day.day:02d}-{day.month:02d}-{day.year}"
    if style == "iso":
        return day.isoformat()
    if style == "d_month_y":
        return f"{day.day} {month} {day.year}"
    if style == "month_d_y":
        return f"{month} {day.day}, {day.year}"
    if style == "d_mon_y":
        return f"{day.day:02d}-{month[:3]}-{day.year}"
    raise ValueError(f"unknown date style {style!r}")
