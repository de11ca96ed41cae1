"""Profiles: the field-name and locale assumptions a workflow selects, and their defaults."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.profiles import DEFAULT_PROFILES, PROFILES, ProfileName, merge
from docflow.extraction.workflow_file import load_workflow_file

# What the engine assumed before profiles existed: the default profiles must add up to it.
BEFORE = {
    "issuer_names": {
        "company",
        "vendor",
        "vendor_name",
        "merchant",
        "merchant_name",
        "seller",
        "supplier",
        "store_name",
    },
    "issuer_addresses": {"address", "vendor_address", "company_address", "merchant_address"},
    "document_dates": {
        "date",
        "invoice_date",
        "issue_date",
        "document_date",
        "receipt_date",
        "transaction_date",
    },
    "grand_totals": {
        "total",
        "total_amount",
        "grand_total",
        "amount_due",
        "total_due",
        "balance_due",
    },
    "currency_fields": {"currency"},
    "street_words": {"jalan", "jln", "taman", "tmn", "lorong", "persiaran", "blok"},
    "tender_words": {"tunai"},
    "legal_forms": {"sdn", "bhd", "berhad", "sb"},
}
LABELLED_BEFORE = {
    "invoice_number",
    "invoice_no",
    "invoice_id",
    "receipt_number",
    "total",
    "total_amount",
    "amount_due",
    "subtotal",
    "tax",
    "date",
    "invoice_date",
    "due_date",
    "vendor_name",
    "vendor",
    "company",
    "currency",
    "po_number",
    "customer_name",
}


def definition(**extra: object) -> ExtractionWorkflowDefinition:
    return ExtractionWorkflowDefinition.model_validate(
        {"name": "t", "fields": [{"name": "company"}], **extra}
    )


def test_the_default_profiles_hold_what_the_engine_assumed_before() -> None:
    merged = merge(DEFAULT_PROFILES)
    for part, names in BEFORE.items():
        assert getattr(merged, part) == names, part
    assert set(merged.labels) == LABELLED_BEFORE
    assert merged.legal_pairs == (("sdn", "bhd"),) and merged.legal_spellings == ("SDN", "BHD")
    assert merged.sum_targets == (
        "subtotal",
        "sub_total",
        "net_total",
        "total",
        "total_amount",
        "amount_due",
    )


def test_profiles_agree_on_the_labels_of_the_names_they_share() -> None:
    """So the order in which a workflow selects them does not matter."""
    for a in PROFILES.values():
        for b in PROFILES.values():
            for name in set(a.labels) & set(b.labels):
                assert a.labels[name] == b.labels[name], (a.name, b.name, name)
    assert (
        merge([ProfileName.RECEIPT, ProfileName.INVOICE]).labels == merge(DEFAULT_PROFILES).labels
    )


def test_a_definition_without_profiles_gets_the_defaults_and_is_stored_as_before() -> None:
    plain = definition()
    assert plain.profiles is None and plain.selected_profiles == DEFAULT_PROFILES
    assert "profiles" not in plain.model_dump(mode="json")  # same stored JSON, same schema hash
    chosen = definition(profiles=["receipt", "en-MY"])
    assert chosen.selected_profiles == (ProfileName.RECEIPT, ProfileName.EN_MY)
    assert chosen.model_dump(mode="json")["profiles"] == ["receipt", "en-MY"]
    assert definition(profiles=[]).selected_profiles == ()


@pytest.mark.parametrize(
    ("profiles", "where", "fragment"),
    [
        (["receipt", "fr-FR"], ("profiles", 1), "Input should be"),
        (["receipt", "receipt"], ("profiles",), "named once"),
        ("receipt", ("profiles",), "valid list"),
    ],
)
def test_an_unknown_or_repeated_profile_is_refused(
    profiles: object, where: tuple[object, ...], fragment: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        definition(profiles=profiles)
    error = caught.value.errors()[0]
    assert error["loc"] == where and fragment in error["msg"]


def test_the_examples_select_the_profiles_they_rely_on() -> None:
    receipt = load_workflow_file("examples/receipt.yaml")
    invoice = load_workflow_file("examples/invoice.yaml")
    assert receipt.selected_profiles == (ProfileName.RECEIPT, ProfileName.EN_MY)
    assert invoice.selected_profiles == (ProfileName.INVOICE,)
