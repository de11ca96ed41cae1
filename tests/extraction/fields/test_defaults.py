"""Fields without locators: label synonyms from the name, dates anywhere, issuer by position,
currency from the amounts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from docflow.extraction.definition import (
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
    LabelLocator,
)
from docflow.extraction.fields.defaults import default_locators
from docflow.extraction.model import DocumentKind, Page, ReadDocument, TextSource
from docflow.extraction.pipeline import extract_fields
from docflow.extraction.profiles import DEFAULT_PROFILES, ProfileName, merge
from docflow.extraction.result import ExtractionResult

from .conftest import lone

PageMaker = Callable[..., Page]

RECEIPT = [
    "      GOLDEN LEAF",
    "   KEDAI RUNCIT MAJU SDN BHD",
    "        (123456-X)",
    "  NO 12, JALAN MAWAR 3,",
    "  TAMAN SRI, 47100 PUCHONG",
    "  TEL: 03-8888 1234",
    "  GST NO: 000123456789",
    "",
    "Receipt#: CS0001   Date: 05/03/2018 14:02",
    "Milo 1kg              2   RM 12.50",
    "TOTAL TAX :               RM 0.71",
    "Total Sales (Excluding GST)    11.79",
    "TOTAL (RM) :             12.50",
    "CASH                     50.00",
    "CHANGE                   37.50",
]


def run(page: Page, *names: tuple[str, FieldType]) -> ExtractionResult:
    fields = [FieldDef(name=n, type=t) for n, t in names]
    definition = ExtractionWorkflowDefinition(name="t", fields=fields)
    return extract_fields(ReadDocument(DocumentKind.JPEG, (page,)), definition)


def labels(name: str, *profiles: ProfileName) -> list[str]:
    locator = default_locators(FieldDef(name=name), merge(profiles))[0]
    assert isinstance(locator, LabelLocator)
    return locator.labels


def test_default_labels_come_from_the_profiles_or_the_name() -> None:
    invoice = labels("invoice_number", ProfileName.INVOICE)
    assert {"Invoice No", "Invoice Number", "Inv #", "Invoice #"} <= set(invoice)
    total = labels("total", ProfileName.RECEIPT)
    assert {"Total", "Amount Due", "Grand Total", "Total Due", "Balance Due"} <= set(total)
    assert labels("account_number", *DEFAULT_PROFILES) == [
        "Account Number",
        "Account No",
        "Account #",
    ]
    assert labels("order_ref", *DEFAULT_PROFILES) == ["Order Ref"]
    assert labels("invoice_number") == ["Invoice Number", "Invoice No", "Invoice #"]


def test_receipt_without_locators(page: PageMaker) -> None:
    p = page(RECEIPT, source=TextSource.OCR, confidence=0.95)
    result = run(
        p,
        ("company", FieldType.STRING),
        ("address", FieldType.STRING),
        ("date", FieldType.DATE),
        ("total", FieldType.MONEY),
        ("currency", FieldType.STRING),
    )
    values = result.values()
    assert values == {
        "company": "KEDAI RUNCIT MAJU SDN BHD",
        "address": "NO 12, JALAN MAWAR 3, TAMAN SRI, 47100 PUCHONG",
        "date": "2018-03-05",
        "total": "12.50",
        "currency": "MYR",
    }
    assert result.fields["company"].locator == "position"
    assert result.fields["date"].locator == "label+pattern"
    assert result.fields["total"].confidence >= 0.9


def test_name_split_over_two_rows_is_joined(page: PageMaker) -> None:
    rows = ["ASO ELECTRICAL", "TRADING SDN BHD", "NO 31G, JALAN SEPADU", "Tel: 03-5555"]
    result = run(page(rows), ("company", FieldType.STRING), ("address", FieldType.STRING))
    assert result.values() == {
        "company": "ASO ELECTRICAL TRADING SDN BHD",
        "address": "NO 31G, JALAN SEPADU",
    }


def test_invoice_issuer_is_printed_before_the_recipient(page: PageMaker) -> None:
    rows = [
        "INVOICE",
        "Northwind Traders",
        "1 Harbour Road, Leeds",
        "Bill To:",
        "Contoso GmbH",
    ]
    result = run(page(rows), ("vendor_name", FieldType.STRING))
    assert result.values() == {"vendor_name": "Northwind Traders"}
    vendor = result.fields["vendor_name"]
    # no legal form, not larger: unclear
    assert vendor.confidence == lone(0.75, "text", position_only=True)


def test_clear_letterhead_scores_higher(page: PageMaker) -> None:
    rows = ["Northwind Traders Ltd", "1 Harbour Road, Leeds", "Invoice No: 7"]
    vendor = run(page(rows), ("vendor_name", FieldType.STRING)).fields["vendor_name"]
    assert vendor.value == "Northwind Traders Ltd"
    assert vendor.confidence == lone(0.85, "text", position_only=True)


def test_identifier_needs_a_digit(page: PageMaker) -> None:
    rows = ["Invoice Number      Invoice Date", "INV/2026/007        14/03/2026"]
    result = run(page(rows), ("invoice_number", FieldType.STRING))
    assert result.values() == {"invoice_number": "INV/2026/007"}


def test_secondary_dates_need_their_label(page: PageMaker) -> None:
    rows = ["Invoice Date: 01/02/2026", "Delivered 03/02/2026"]
    result = run(page(rows), ("invoice_date", FieldType.DATE), ("due_date", FieldType.DATE))
    assert result.values() == {"invoice_date": "2026-02-01", "due_date": None}


def test_unlabelled_date_is_found_anywhere(page: PageMaker) -> None:
    rows = ["SHOP", "", "23 Aug 2024  10:21", "Later 24/08/2024"]
    date = run(page(rows), ("date", FieldType.DATE)).fields["date"]
    assert (date.value, date.locator) == ("2024-08-23", "pattern")
    # the later date is too weak a rival to matter much
    assert lone(0.65, "date") < date.confidence <= lone(0.7, "date")


def test_the_only_date_on_the_page_is_surer(page: PageMaker) -> None:
    rows = ["SHOP", "23 Aug 2024  10:21", "Thank you, 23/08/2024"]
    date = run(page(rows), ("date", FieldType.DATE)).fields["date"]
    assert (date.value, date.confidence) == ("2024-08-23", lone(0.85, "date"))


def test_currency_from_symbols_not_from_company_forms(page: PageMaker) -> None:
    rows = ["ACME SDN BHD", "Item     €12,00", "Total    €12,00"]
    currency = run(page(rows), ("currency", FieldType.STRING)).fields["currency"]
    assert (currency.value, currency.locator) == ("EUR", "currency")
    none = run(page(["ACME SDN BHD", "Total 12.00"]), ("currency", FieldType.STRING))
    assert none.fields["currency"].value is None


def test_currency_enum_gets_the_canonical_value(page: PageMaker) -> None:
    definition = ExtractionWorkflowDefinition(
        name="t", fields=[FieldDef(name="currency", type="enum", enum_values=["usd", "eur"])]
    )
    doc = ReadDocument(DocumentKind.PDF, (page(["Total   $ 5.00"]),))
    assert extract_fields(doc, definition).values() == {"currency": "usd"}


def test_specks_registration_numbers_and_dates_around_the_address(page: PageMaker) -> None:
    rows = [
        "3 '8 OI OIF",
        "",
        "",
        "UNIHAKKA INTERNATIONAL SDN BHD",
        "12 Mar 2018 18:19",
        ".",
        "(867388-U) 12, Jalan Tampoi 7/4,",
        "| Kawasan Perindustrian Tampoi,81200 Johor Bahru",
        "TEL: 07-1234567",
    ]
    result = run(page(rows), ("company", FieldType.STRING), ("address", FieldType.STRING))
    assert result.values() == {
        "company": "UNIHAKKA INTERNATIONAL SDN BHD",
        "address": "12, Jalan Tampoi 7/4, Kawasan Perindustrian Tampoi,81200 Johor Bahru",
    }


@pytest.mark.parametrize(
    ("rows", "name"),
    [
        (["| PRINT EXPERT SON BHD (139386 X) |", "NO 3, JALAN 2"], "PRINT EXPERT SDN BHD"),
        (["KING'S CONFECTIONERY S/B 273500-U)"], "KING'S CONFECTIONERY S/B"),
        (
            ["LAVENDER CONFECTIONERY", "& BAKERY S/B", "NO 1, JALAN 2"],
            "LAVENDER CONFECTIONERY & BAKERY S/B",
        ),
        (["Amazon Web Services Invoice", "Invoice Number: 1"], "Amazon Web Services"),
        (["QualityHosting AG - Uferweg 40-42 - D-63571 Gelnhausen"], "QualityHosting AG"),
        (["FACTUUR.                          Coolblue B.V."], "Coolblue B.V."),
    ],
)
def test_issuer_name_cleaned(page: PageMaker, rows: list[str], name: str) -> None:
    assert run(page(rows), ("company", FieldType.STRING)).values() == {"company": name}


def _ocr(page: Page, low: set[int] | None = None) -> Page:
    """The page as OCR would give it, with the words of rows in `low` read uncertainly."""
    words = tuple(replace(w, confidence=0.2 if low and w.line in low else 0.9) for w in page.words)
    return replace(page, source=TextSource.OCR, words=words)


def company_of(page: Page) -> str | None:
    return run(page, ("company", FieldType.STRING)).fields["company"].value


def test_issuer_row_with_registration_number_is_a_name(page: PageMaker) -> None:
    rows = ["  99 SPEED MART S/B (519537-X)", "  LOT P.7. 2811, JALAN ANGSA,", "  TAMAN BERKELEY"]
    assert company_of(page(rows)) == "99 SPEED MART S/B"


def test_logo_junk_read_uncertainly_is_passed_over(page: PageMaker) -> None:
    rows = ["BEN PR Bree", "", "SYARIKAT PERNIAGAAN GIN KEE", "(81109-A)", "NO 290, JALAN AIR"]
    assert company_of(_ocr(page(rows), low={0})) == "SYARIKAT PERNIAGAAN GIN KEE"


def test_address_rows_and_payment_headings_are_not_names(page: PageMaker) -> None:
    rows = ["3RD FLR, AEON TAMAN MALURI SC", "50250 Kuala Lumpur.", "CASH", "Golden Bakery"]
    assert company_of(page(rows)) == "Golden Bakery"


def test_misread_sdn_bhd_counts_as_a_legal_form_and_is_set_right(page: PageMaker) -> None:
    rows = ["GARDENIA BAKERIES (KL) SON PHD", "Lot 3, Jalan Pelabur", "MAKASSAR MARKET SDN BHD"]
    assert company_of(_ocr(page(rows))) == "GARDENIA BAKERIES (KL) SDN BHD"
    assert company_of(_ocr(page(["ACME TRADING SDN BILD"]))) == "ACME TRADING SDN BHD"


def test_qualifier_row_with_legal_form_ends_the_name(page: PageMaker) -> None:
    rows = ["PASAR RAYA MEGA MAJU", "(SEMENYIH) SDN BHD", "(767840-W)", "NO 24, JALAN PUSAT"]
    assert company_of(page(rows)) == "PASAR RAYA MEGA MAJU (SEMENYIH) SDN BHD"


def test_yen_sign_between_letters_is_a_y(page: PageMaker) -> None:
    assert company_of(page(["MR. D.I.¥. (KUCHAI) SDN BHD"])) == "MR. D.I.Y. (KUCHAI) SDN BHD"


def test_unclosed_registration_remark_is_dropped(page: PageMaker) -> None:
    rows = ["Dion Realties Sdn Bhd (Co. No: 20154-T)", "27, Jalan Sultan Ismail,"]
    assert company_of(page(rows)) == "Dion Realties Sdn Bhd"


RECEIPT_TOP = ["12 JALAN MAWAR", "GOLDEN LEAF TRADING", "Date: 05/03/2018", "TOTAL 9.90"]


def company(page: Page, *profiles: str) -> str | None:
    definition = ExtractionWorkflowDefinition.model_validate(
        {"name": "t", "fields": [{"name": "company"}], "profiles": list(profiles)}
    )
    return (
        extract_fields(ReadDocument(DocumentKind.JPEG, (page,)), definition).fields["company"].value
    )


def test_a_locale_profile_adds_its_street_words(page: PageMaker) -> None:
    p = page(RECEIPT_TOP, source=TextSource.OCR, confidence=0.95)
    assert company(p, "receipt", "en-MY") == "GOLDEN LEAF TRADING"
    # Without en-MY "Jalan" is not known as a street word: the address line looks like a name.
    assert company(p, "receipt") == "12 JALAN MAWAR"


def test_without_profiles_a_field_is_found_only_by_its_own_name(page: PageMaker) -> None:
    p = page(RECEIPT_TOP, source=TextSource.OCR, confidence=0.95)
    assert company(p) is None  # no "Company" label, and no issuer by position
    labelled = page(["Company: Golden Leaf", *RECEIPT_TOP], source=TextSource.OCR)
    assert company(labelled) == "Golden Leaf"


def test_a_locale_profile_adds_its_legal_forms(page: PageMaker) -> None:
    p = page(["GOLDEN LEAF", "KEDAI MAJU SON PHD", "12 Main Street"], source=TextSource.OCR)
    # With en-MY the misread "SDN BHD" marks the registered name under the brand line and is
    # set right; without it the brand line comes first and nothing is set right.
    assert company(p, "receipt", "en-MY") == "KEDAI MAJU SDN BHD"
    assert company(p, "receipt") == "GOLDEN LEAF"
