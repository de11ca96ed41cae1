"""Money and plain numbers as printed on invoices and receipts.

Both `1,234.56` and `1.234,56` (and `1 234,56`, `1'234.56`) are understood: when a string holds
both `.` and `,` the last one is the decimal separator; when it holds one of them once followed by
exactly three digits it groups thousands, otherwise it is the decimal separator. Negatives are
written `-12.00`, `12.00-` or `(12.00)`. A currency symbol or ISO code may stand before or after
the amount.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# Symbols map to the currency they most often mean; `$` alone is taken as USD and `¥` as JPY.
CURRENCY_SYMBOLS: dict[str, str] = {
    "US$": "USD",
    "S$": "SGD",
    "A$": "AUD",
    "C$": "CAD",
    "HK$": "HKD",
    "NZ$": "NZD",
    "R$": "BRL",
    "$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "₩": "KRW",
    "₽": "RUB",
    "₺": "TRY",
    "฿": "THB",
    "₫": "VND",
    "₱": "PHP",
    "RM": "MYR",
    "RS.": "INR",
    "RS": "INR",
    "ZŁ": "PLN",
    "KČ": "CZK",
    "FR.": "CHF",
}

_ISO_CODES = (
    "USD EUR GBP JPY CNY MYR SGD INR AUD CAD CHF HKD NZD SEK NOK DKK PLN CZK HUF RON BGN RUB "
    "BRL MXN ZAR THB IDR PHP VND KRW AED SAR ILS TWD ARS CLP COP PEN EGP NGN KES PKR BDT LKR "
    "QAR KWD BHD OMR MAD UAH ISK"
)
ISO_CODES: frozenset[str] = frozenset(_ISO_CODES.split(" "))

_SYMBOL_RE = "|".join(re.escape(s) for s in sorted(CURRENCY_SYMBOLS, key=len, reverse=True))
_CODE_RE = "|".join(sorted(ISO_CODES))
_CURRENCY = rf"(?:{_SYMBOL_RE}|(?<![A-Za-z])(?:{_CODE_RE})(?![A-Za-z]))"
_LEADING = re.compile(rf"^\s*(?P<cur>{_CURRENCY})\s*", re.IGNORECASE)
_TRAILING = re.compile(rf"\s*(?P<cur>{_CURRENCY})\s*$", re.IGNORECASE)
_SIGN_AFTER_CURRENCY = re.compile(rf"^({_CURRENCY})\s*[-−]\s*(.*)$", re.IGNORECASE)
_NUMBER = re.compile(r"^\d[\d.,' \u00a0\u202f]*$")
_SPLIT_DECIMALS = re.compile(r"(\d)([.,])\s+(\d{2})$")  # OCR often prints "200. 00"
# Amounts carry cents: "55 10" is 55.10 whose point the OCR lost, not 5510 grouped.
_LOST_POINT = re.compile(r"\d{1,3} \d{2}")


class NumberError(ValueError):
    """The text is not a number in any of the accepted written forms."""


@dataclass(frozen=True, slots=True)
class Money:
    amount: Decimal
    currency: str | None


def currency_code(token: str) -> str | None:
    """The ISO code a symbol or code stands for, or None."""
    upper = token.strip().upper()
    if upper in ISO_CODES:
        return upper
    return CURRENCY_SYMBOLS.get(upper)


def parse_number(text: str) -> Decimal:
    """Parse an unsigned or signed number with thousands grouping in any common style."""
    body, negative = _strip_sign(text.strip())
    body = _SPLIT_DECIMALS.sub(r"\1\2\3", body)
    if not _NUMBER.match(body):
        raise NumberError(f"not a number: {text!r}")
    digits = _canonical_digits(body)
    try:
        value = Decimal(digits)
    except InvalidOperation as exc:
        raise NumberError(f"not a number: {text!r}") from exc
    return -value if negative else value


def parse_money(text: str) -> Money:
    """Parse an amount with an optional currency symbol or ISO code on either side."""
    body, negative = _strip_sign(text.strip())
    currency = None
    for pattern in (_LEADING, _TRAILING):
        match = pattern.search(body)
        if match:
            currency = currency_code(match.group("cur"))
            body = body[: match.start()] + body[match.end() :]
            break
    if _LOST_POINT.fullmatch(body.strip()):
        body = body.strip().replace(" ", ".")
    amount = parse_number(body)
    if negative:
        amount = -amount
    return Money(amount, currency)


def format_money(amount: Decimal) -> str:
    """A plain decimal string with two places: `1234.50`, `-12.00`."""
    return str(amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _strip_sign(text: str) -> tuple[str, bool]:
    if len(text) > 2 and text.startswith("(") and text.endswith(")"):
        return text[1:-1].strip(), True
    if text.startswith(("-", "−", "–")):
        return text[1:].strip(), True
    if text.endswith("-"):
        return text[:-1].strip(), True
    # A sign between the currency and the digits: "€-12.00", "RM -3.10".
    match = _SIGN_AFTER_CURRENCY.match(text)
    if match:
        return f"{match.group(1)}{match.group(2)}", True
    return text, False


def _canonical_digits(body: str) -> str:
    """Turn a grouped number into `1234.56` form, deciding which mark is the decimal point."""
    compact = re.sub(r"[' \u00a0\u202f]", "", body)
    last_dot, last_comma = compact.rfind("."), compact.rfind(",")
    if last_dot >= 0 and last_comma >= 0:
        decimal_mark = "." if last_dot > last_comma else ","
    elif last_dot < 0 and last_comma < 0:
        if not _well_grouped(body, ""):
            raise NumberError(f"not a number: {body!r}")
        return compact
    else:
        mark = "." if last_dot >= 0 else ","
        tail = compact[compact.rfind(mark) + 1 :]
        head = compact[: compact.find(mark)]
        grouped = compact.count(mark) > 1 or (len(tail) == 3 and head.lstrip("0") != "")
        decimal_mark = "" if grouped else mark
    group_mark = {".": ",", ",": ".", "": ".,"}[decimal_mark]
    for mark in group_mark:
        compact = compact.replace(mark, "")
    if not _well_grouped(body, decimal_mark):
        raise NumberError(f"not a number: {body!r}")
    if decimal_mark:
        whole, _, fraction = compact.rpartition(decimal_mark)
        if decimal_mark in whole or not fraction.isdigit():
            raise NumberError(f"not a number: {body!r}")
        compact = f"{whole or '0'}.{fraction}"
    return compact


def _well_grouped(body: str, decimal_mark: str) -> bool:
    """Thousands groups must look like groups: `1,234,567`, `12,34,567` (Indian), `1 234`."""
    whole = body.rpartition(decimal_mark)[0] if decimal_mark else body
    groups = re.split(r"[.,' \u00a0\u202f]", whole)
    if len(groups) == 1:
        return True
    first, *middle, last = groups
    return (
        1 <= len(first) <= 3
        and len(last) == 3
        and all(len(g) in (2, 3) for g in middle)
        and all(g.isdigit() for g in groups)
    )
