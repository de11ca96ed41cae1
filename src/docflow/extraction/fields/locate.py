"""The locate stage: every locator of every scalar field proposes candidate values.

A field's declared locators run in order (template regions, label anchors, patterns); a field
that declares none gets the default label locator (`defaults`) and, where the workflow's profiles
name it, the finds by position: the issuer's name or address at the top of page 1, any printed
date. Each candidate is parsed and validated against the field's type as it is found (a typed
value is recognised by parsing: see `candidates.FieldSpec.candidate`), so the candidates carry
their normalised value or the reason it is invalid. None decides the value (see `combine`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from docflow.extraction.definition import (
    ExtractionWorkflowDefinition,
    FieldType,
    LabelLocator,
    PatternLocator,
    RegionLocator,
)
from docflow.extraction.fields.address import address_candidate
from docflow.extraction.fields.candidates import Candidate, FieldSpec
from docflow.extraction.fields.defaults import (
    currency_candidates,
    date_candidates,
    default_locators,
)
from docflow.extraction.fields.locators import label_candidates, pattern_candidates
from docflow.extraction.fields.position import company_candidate, looks_like_name
from docflow.extraction.fields.regions import region_candidates
from docflow.extraction.fields.view import DocumentView
from docflow.extraction.profiles import Profile


@dataclass(frozen=True, slots=True)
class Located:
    """The candidates of every scalar field, by field name in the definition's order."""

    by_field: Mapping[str, tuple[Candidate, ...]]


def locate(
    view: DocumentView, definition: ExtractionWorkflowDefinition, profile: Profile
) -> Located:
    """Candidates for every scalar field, from its locators or, if it has none, the defaults."""
    return Located(
        {
            field.name: tuple(
                field_candidates(view, FieldSpec(field, definition.date_order, profile))
            )
            for field in definition.fields
            if field.type != FieldType.LINE_ITEMS
        }
    )


def field_candidates(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    """One field's candidates; a value proposed for an issuer's name must look like a name."""
    field, profile = spec.field, spec.profile
    found: list[Candidate] = []
    for locator in field.locators or default_locators(field, profile):
        if isinstance(locator, RegionLocator):
            found.extend(region_candidates(view, spec, locator))
        elif isinstance(locator, LabelLocator):
            found.extend(label_candidates(view, spec, locator))
        elif isinstance(locator, PatternLocator):
            found.extend(pattern_candidates(view, spec, locator))
    if not field.locators:
        found.extend(_by_position(view, spec))
    if field.name in profile.issuer_names:
        found = [c for c in found if looks_like_name(c.raw, profile)]
    if field.name in profile.currency_fields:
        found.extend(currency_candidates(view, spec))
    return found


def _by_position(view: DocumentView, spec: FieldSpec) -> list[Candidate]:
    field, profile = spec.field, spec.profile
    found: list[Candidate | None] = []
    if field.name in profile.issuer_names:
        found.append(company_candidate(view, spec))
    if field.name in profile.issuer_addresses:
        found.append(address_candidate(view, spec))
    if field.type == FieldType.DATE and field.name in profile.document_dates:
        found.extend(date_candidates(view, spec))
    return [c for c in found if c is not None]
