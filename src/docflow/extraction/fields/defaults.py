"""What to look for when a field declares no locators: defaults from its name and type.

- Label synonyms from the field name: well-known names get the usual wordings
  (`invoice_number` -> "Invoice No", "Invoice Number", "Inv #", "Invoice #", ...; `total` ->
  "Total", "Amount Due", "Grand Total", "Total Due", "Balance Due", ...; see `SYNONYMS`); any other
  name is looked for as its own words ("po_number" -> "Po Number", plus "Po No" and "Po #" for
  `*_number`). The value is taken to the right of the label or below it.
- Dates: fields named `date`, `invoice_date`, `issue_date`, `document_date`, `receipt_date` or
  `transaction_date` also take any date printed on the page (the first one scores highest, and
  higher still when it is the only date printed), so a receipt whose date has no label still
  gets one; when none is legible, a garbled date right after a "Date" label is repaired if
  only one reading fits (`date_repair`); other dates (`due_date`, ...) need their label,
  because the first date on a page is rarely theirs.
- Free text by position: `company`, `vendor`, `vendor_name`, `merchant`, `merchant_name`,
  `seller`, `supplier` and `store_name` take the issuer's name at the top of page 1, `address`,
  `vendor_address`, `company_address` and `merchant_address` the lines under it (see `position`
  and `address`). Whatever locator proposes a value for one of these company names, a value that
  cannot be a name (mostly digits, a parenthesised remark, a "Label:") is dropped.
- Currency: a field named `currency` (string or enum) takes the currency codes and symbols printed
  on rows that hold an amount, the most frequent winning. This one also runs next to declared
  locators, because it only proposes currencies actually printed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from docflow.extraction.definition import FieldDef, FieldType, LabelLocator, Locator
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.date_repair import repair_date, repair_textual
from docflow.extraction.fields.layout import compact, join_words
from docflow.extraction.fields.money import NumberError, currency_code, parse_money
from docflow.extraction.fields.view import DocumentView
from docflow.extraction.model import Word

_INVOICE_NO = (
    "Invoice No",
    "Invoice Number",
    "Invoice #",
    "Inv #",
    "Inv No",
    "Invoice ID",
    "Bill No",
    "Receipt No",
    "Document No",
    "Invoice",
)
_TOTAL = (
    "Total",
    "Amount Due",
    "Grand Total",
    "Total Due",
    "Balance Due",
    "Total Amount",
    "Amount Payable",
    "Total Payable",
    "Invoice Total",
    "Rounded Total",
    "Net Total",
)
_DATE = (
    "Date",
    "Invoice Date",
    "Receipt Date",
    "Issue Date",
    "Date of Issue",
    "Bill Date",
    "Transaction Date",
    "Trans Date",
    "Dated",
)
# "Company" and "Store" head registration and branch lines on receipts far more often than the
# issuer's name, so they are not default labels.
_VENDOR = ("Vendor", "Supplier", "Seller", "Sold By")

SYNONYMS: dict[str, tuple[str, ...]] = {
    "invoice_number": _INVOICE_NO,
    "invoice_no": _INVOICE_NO,
    "invoice_id": _INVOICE_NO,
    "receipt_number": ("Receipt No", "Receipt Number", "Receipt #", "Bill No", "Invoice No"),
    "total": _TOTAL,
    "total_amount": _TOTAL,
    "amount_due": ("Amount Due", "Balance Due", "Total Due", "Amount Payable"),
    "subtotal": ("Subtotal", "Sub Total", "Sub-Total", "Net Amount", "Total Before Tax"),
    "tax": ("Tax", "Total Tax", "Tax Amount", "Sales Tax", "VAT", "VAT Amount", "GST"),
    "date": _DATE,
    "invoice_date": ("Invoice Date", "Date of Invoice", "Issue Date", "Date of Issue", "Date"),
    "due_date": ("Due Date", "Payment Due", "Due By", "Pay By", "Due"),
    "vendor_name": _VENDOR,
    "vendor": _VENDOR,
    "company": _VENDOR,
    "currency": ("Currency",),
    "po_number": ("PO Number", "PO No", "PO #", "Purchase Order", "Order No"),
    "customer_name": ("Bill To", "Customer", "Sold To", "Client"),
}

PRIMARY_DATES = frozenset(
    {"date", "invoice_date", "issue_date", "document_date", "receipt_date", "transaction_date"}
)
COMPANY_NAMES = frozenset(
    {
        "company",
        "vendor",
        "vendor_name",
        "merchant",
        "merchant_name",
        "seller",
        "supplier",
        "store_name",
    }
)
ADDRESS_NAMES = frozenset({"address", "vendor_address", "company_address", "merchant_address"})
DATE_SCAN_UNIQUE, DATE_SCAN_FIRST, DATE_SCAN_LATER = 0.85, 0.7, 0.5
DATE_REPAIRED = 0.45
_REPAIR_WORDS = 3
CURRENCY_SCORE = 0.9


def default_locators(field: FieldDef) -> list[Locator]:
    """Label locators for a field that declares none."""
    labels = SYNONYMS.get(field.name)
    if labels is None:
        words = field.name.replace("_", " ").title()
        labels = (words,)
        if field.name.endswith("_number"):
            stem = words.rsplit(" ", 1)[0]
            labels = (words, f"{stem} No", f"{stem} #")
    return [LabelLocator(labels=list(labels), direction="any")]


def date_candidates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    """Every date printed on the pages, in reading order; the first scores highest."""
    found: list[Candidate] = []
    for page in view.pages:
        for row in page.rows:
            found.extend(_dates_in(spec, row.words, row.page, first=not found))
    if found and len({c.value for c in found}) == 1:
        found[0] = replace(found[0], score=DATE_SCAN_UNIQUE)  # nothing to confuse it with
    return found or repaired_dates(view, spec)


def repaired_dates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    """When no date is printed legibly, the garbled ones right after a "Date" label that one
    reading alone fits (see `date_repair`), the first scoring highest."""
    found: list[Candidate] = []
    for page in view.pages:
        for row in page.rows:
            for i, word in enumerate(row.words):
                labelled = compact(word.text).startswith("date")
                run = row.words[i + 1 : i + 1 + _REPAIR_WORDS] if labelled else (word,)
                text = join_words(run) if run else ""
                repaired = repair_date(text, spec.date_order) if labelled else repair_textual(text)
                if repaired is None:
                    continue
                score = DATE_REPAIRED if not found else DATE_REPAIRED * DATE_SCAN_LATER
                value = repaired.isoformat()
                found.append(spec.candidate(run, row.page, score, "pattern", value))
    return found


def _dates_in(
    spec: FieldSpec, words: tuple[Word, ...], page: int, *, first: bool
) -> list[Candidate]:
    found: list[Candidate] = []
    start = 0
    while start < len(words):
        for length in range(min(4, len(words) - start), 0, -1):
            run = words[start : start + length]
            if not any(ch.isdigit() for ch in join_words(run)):
                continue
            score = DATE_SCAN_FIRST if first and not found else DATE_SCAN_LATER
            candidate = spec.candidate(run, page, score, "pattern")
            if candidate.error is None:
                found.append(candidate)
                start += length - 1
                break
        start += 1
    return found


def currency_candidates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    """One candidate per currency printed on the pages, scored by how often it appears."""
    seen: Counter[str] = Counter()
    where: dict[str, tuple[Word, int]] = {}
    for page in view.pages:
        for row in page.rows:
            if not any(_is_amount(w.text) for w in row.words):
                continue  # "SDN BHD" is a company form, not Bahraini dinars
            for word in row.words:
                code = _currency_of(word.text)
                if code is not None:
                    seen[code] += 1
                    where.setdefault(code, (word, row.page))
    total = sum(seen.values())
    found = []
    for code, count in seen.most_common():
        word, number = where[code]
        score = CURRENCY_SCORE * count / total
        candidate = spec.candidate((word,), number, score, "currency", code)
        if candidate.error is None:
            found.append(candidate)
    return found


def _is_amount(text: str) -> bool:
    if not any(ch.isdigit() for ch in text):
        return False
    try:
        parse_money(text.strip(" :;,."))
    except NumberError:
        return False
    return True


def _currency_of(text: str) -> str | None:
    token = text.strip(" .,:;()")
    code = currency_code(token)
    if code is not None and (len(token) > 1 or not token.isalpha()):
        return code
    if any(ch.isdigit() for ch in token):
        try:
            return parse_money(token).currency
        except NumberError:
            return None
    return None


def is_typed_date(field: FieldDef) -> bool:
    return field.type == FieldType.DATE and field.name in PRIMARY_DATES
