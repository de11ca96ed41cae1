"""Field profiles: what the engine assumes from a field's name or a document's locale.

The generic engine knows types (money, dates, ...), labels and layout; it knows nothing of what a
field called `total` or `company` means, or of the words a country prints. A profile names such
assumptions so a workflow selects them (`profiles:` in the definition) instead of having them
built in:

- `invoice`: supplier invoices. Default label wordings for invoice fields (`invoice_number`,
  `invoice_date`, `due_date`, `vendor_name`, `subtotal`, `tax`, `total`, `po_number`, ...); the
  vendor's name and address taken by position from the letterhead (`vendor_name`, `vendor`,
  `supplier`, `seller`, `company`; `vendor_address`, `company_address`, `address`); the issue
  date taken from any date printed when unlabelled (`date`, `invoice_date`, `issue_date`,
  `document_date`); money fields named like a grand total (`total`, `total_amount`,
  `grand_total`, `amount_due`, `total_due`, `balance_due`) include every other amount; line
  items add up to `subtotal`, `sub_total`, `net_total`, `total`, `total_amount` or `amount_due`
  (the first present); a field named `currency` takes the currency printed beside amounts.
- `receipt`: till receipts. The shop's name and address by position (`company`, `merchant`,
  `merchant_name`, `store_name`; `address`, `merchant_address`, `company_address`); the purchase
  date from any date printed (`date`, `receipt_date`, `transaction_date`); grand totals as for
  invoices, cross-checked against the amount paid on the payment lines; `receipt_number` and the
  shared names (`total`, `date`, `company`, `currency`, ...) get their usual label wordings.
- `en-MY`: documents printed in Malaysia. Malay street words (`Jalan`, `Jln`, `Taman`, `Tmn`,
  `Lorong`, `Persiaran`, `Blok`) mark a row as an address line, so it is not taken for the
  issuer's name; `Tunai` (cash) starts a payment line; `Sdn Bhd`, `Berhad` and `S/B` are legal
  forms of a company's name, and `SDN BHD` misread by OCR (`SON BHD`, `SDN BILD`) is set right.

A definition without `profiles` gets `DEFAULT_PROFILES` (all of them), which is what the engine
did before profiles existed; `profiles: []` runs the generic engine alone (a field without
locators is then looked for by its own name as a label, and nothing more). Selected profiles are
merged (`merge`): their name sets are united; where two define label wordings for the same field
name they agree (a test holds them to it), so the order of selection does not matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TypeVar

T = TypeVar("T")


class ProfileName(StrEnum):
    INVOICE = "invoice"
    RECEIPT = "receipt"
    EN_MY = "en-MY"


@dataclass(frozen=True, slots=True)
class Profile:
    """Assumptions tied to field names or a locale; every part is optional.

    labels: default label wordings by field name, for a field that declares no locators.
    issuer_names / issuer_addresses: fields that take the issuer's name (or the address under
        it) by position at the top of page 1 when they declare no locators; a value proposed
        for an issuer name by any locator must look like a name.
    document_dates: date fields that, without locators, also take any date printed.
    grand_totals: money fields that include every other amount printed near them (the largest
        of the close candidates wins) and are cross-checked against the amount paid.
    sum_targets: fields a line-item table must add up to, the first one present reported.
    currency_fields: fields that also take the currency printed beside amounts.
    street_words: words that, next to a number, make a row an address line (compact form).
    tender_words: words that start a payment line, as "Cash" does (compact form).
    legal_forms: words only a registered company's name carries (compact form); one printed
        makes a phrase the issuer's name before a brand line above it.
    legal_spellings: legal forms as printed in capitals, set right when OCR misreads one letter
        next to a correct form ("SON BHD").
    legal_printed: regular expressions of legal forms as printed alone on the last row of a
        name ("(SEMENYIH) SDN BHD").
    legal_pairs: two legal forms always printed together ("Sdn Bhd", compact form), set right
        when OCR misreads both words or the second.
    """

    name: str
    labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    issuer_names: frozenset[str] = frozenset()
    issuer_addresses: frozenset[str] = frozenset()
    document_dates: frozenset[str] = frozenset()
    grand_totals: frozenset[str] = frozenset()
    sum_targets: tuple[str, ...] = ()
    currency_fields: frozenset[str] = frozenset()
    street_words: frozenset[str] = frozenset()
    tender_words: frozenset[str] = frozenset()
    legal_forms: frozenset[str] = frozenset()
    legal_spellings: tuple[str, ...] = ()
    legal_printed: tuple[str, ...] = ()
    legal_pairs: tuple[tuple[str, str], ...] = ()


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
_SUBTOTAL = ("Subtotal", "Sub Total", "Sub-Total", "Net Amount", "Total Before Tax")
_TAX = ("Tax", "Total Tax", "Tax Amount", "Sales Tax", "VAT", "VAT Amount", "GST")
_AMOUNT_DUE = ("Amount Due", "Balance Due", "Total Due", "Amount Payable")

# Label wordings of the names invoices and receipts share.
_SHARED_LABELS: dict[str, tuple[str, ...]] = {
    "total": _TOTAL,
    "total_amount": _TOTAL,
    "amount_due": _AMOUNT_DUE,
    "subtotal": _SUBTOTAL,
    "tax": _TAX,
    "date": _DATE,
    "company": _VENDOR,
    "currency": ("Currency",),
}
_GRAND_TOTALS = frozenset(
    {"total", "total_amount", "grand_total", "amount_due", "total_due", "balance_due"}
)

INVOICE = Profile(
    name=ProfileName.INVOICE,
    labels=MappingProxyType(
        {
            **_SHARED_LABELS,
            "invoice_number": _INVOICE_NO,
            "invoice_no": _INVOICE_NO,
            "invoice_id": _INVOICE_NO,
            "invoice_date": (
                "Invoice Date",
                "Date of Invoice",
                "Issue Date",
                "Date of Issue",
                "Date",
            ),
            "due_date": ("Due Date", "Payment Due", "Due By", "Pay By", "Due"),
            "vendor_name": _VENDOR,
            "vendor": _VENDOR,
            "po_number": ("PO Number", "PO No", "PO #", "Purchase Order", "Order No"),
            "customer_name": ("Bill To", "Customer", "Sold To", "Client"),
        }
    ),
    issuer_names=frozenset({"vendor", "vendor_name", "supplier", "seller", "company"}),
    issuer_addresses=frozenset({"vendor_address", "company_address", "address"}),
    document_dates=frozenset({"date", "invoice_date", "issue_date", "document_date"}),
    grand_totals=_GRAND_TOTALS,
    sum_targets=("subtotal", "sub_total", "net_total", "total", "total_amount", "amount_due"),
    currency_fields=frozenset({"currency"}),
)

RECEIPT = Profile(
    name=ProfileName.RECEIPT,
    labels=MappingProxyType(
        {
            **_SHARED_LABELS,
            "receipt_number": (
                "Receipt No",
                "Receipt Number",
                "Receipt #",
                "Bill No",
                "Invoice No",
            ),
        }
    ),
    issuer_names=frozenset({"company", "merchant", "merchant_name", "store_name"}),
    issuer_addresses=frozenset({"address", "merchant_address", "company_address"}),
    document_dates=frozenset({"date", "receipt_date", "transaction_date"}),
    grand_totals=_GRAND_TOTALS,
    currency_fields=frozenset({"currency"}),
)

EN_MY = Profile(
    name=ProfileName.EN_MY,
    street_words=frozenset({"jalan", "jln", "taman", "tmn", "lorong", "persiaran", "blok"}),
    tender_words=frozenset({"tunai"}),
    legal_forms=frozenset({"sdn", "bhd", "berhad", "sb"}),
    legal_spellings=("SDN", "BHD"),
    legal_printed=(r"sdn\.?", r"bhd\.?", "berhad", "s/b"),
    legal_pairs=(("sdn", "bhd"),),
)

PROFILES: Mapping[ProfileName, Profile] = MappingProxyType(
    {ProfileName.INVOICE: INVOICE, ProfileName.RECEIPT: RECEIPT, ProfileName.EN_MY: EN_MY}
)
DEFAULT_PROFILES: tuple[ProfileName, ...] = tuple(PROFILES)


def merge(names: Iterable[ProfileName]) -> Profile:
    """One profile holding the assumptions of all `names` (see the module docstring)."""
    chosen = [PROFILES[name] for name in dict.fromkeys(names)]
    labels: dict[str, tuple[str, ...]] = {}
    for profile in chosen:
        for name, wordings in profile.labels.items():
            labels.setdefault(name, wordings)
    return Profile(
        name="+".join(p.name for p in chosen),
        labels=MappingProxyType(labels),
        issuer_names=frozenset().union(*(p.issuer_names for p in chosen)),
        issuer_addresses=frozenset().union(*(p.issuer_addresses for p in chosen)),
        document_dates=frozenset().union(*(p.document_dates for p in chosen)),
        grand_totals=frozenset().union(*(p.grand_totals for p in chosen)),
        sum_targets=_joined(p.sum_targets for p in chosen),
        currency_fields=frozenset().union(*(p.currency_fields for p in chosen)),
        street_words=frozenset().union(*(p.street_words for p in chosen)),
        tender_words=frozenset().union(*(p.tender_words for p in chosen)),
        legal_forms=frozenset().union(*(p.legal_forms for p in chosen)),
        legal_spellings=_joined(p.legal_spellings for p in chosen),
        legal_printed=_joined(p.legal_printed for p in chosen),
        legal_pairs=_joined(p.legal_pairs for p in chosen),
    )


def _joined(parts: Iterable[tuple[T, ...]]) -> tuple[T, ...]:
    """The items of all `parts` in order, each once."""
    return tuple(dict.fromkeys(item for part in parts for item in part))
