"""The template canvas: a workflow's template regions as boxes drawn on a sample document, what
each box extracts from that sample, and the definition the boxes make.

A box is a field with one region locator (`RegionLocator`: a page, a box in normalised page
coordinates, and optionally the anchor word it moves with). `boxes_of` reads them from a
definition (a field's first region), `with_boxes` puts them back into one: each box's field
gets that region as its first locator in place of its region locators (its label and pattern
locators stay after it) and the box's type; a box naming no field adds one; a field whose box
was removed keeps its other locators. The template records the sample it was drawn on.

`preview` runs the real engine stages (`extract_read_document`) over the sample's pages, as
read once and cached by the caller, with a definition of the boxes' fields alone, each with its
region only: what each box extracts by itself. Its cost is the engine's after reading, a few
milliseconds a page, bounded by the number of boxes (`MAX_FIELDS`).
"""

from __future__ import annotations

from typing import Any

from docflow.extraction.definition import (
    ExtractionWorkflowDefinition,
    FieldDef,
    FieldType,
    RegionLocator,
)
from docflow.extraction.errors import Rejected
from docflow.extraction.model import ReadDocument
from docflow.extraction.pipeline import extract_read_document
from docflow.extraction.result import FieldResult
from docflow.workflows.schemas import CanvasBox


def boxes_of(definition: ExtractionWorkflowDefinition) -> list[CanvasBox]:
    """Each field's first template region, as a box."""
    boxes = []
    for field in definition.fields:
        region = next((r for r in field.locators if isinstance(r, RegionLocator)), None)
        if region is not None and field.type != FieldType.LINE_ITEMS:
            boxes.append(
                CanvasBox(
                    name=field.name,
                    type=field.type,
                    page=region.page,
                    box=region.box,
                    anchor=region.anchor,
                    anchor_box=region.anchor_box,
                )
            )
    return boxes


def _region(box: CanvasBox) -> dict[str, Any]:
    return RegionLocator(
        page=box.page, box=box.box, anchor=box.anchor, anchor_box=box.anchor_box
    ).model_dump(mode="json")


def with_boxes(
    definition: ExtractionWorkflowDefinition,
    boxes: list[CanvasBox],
    *,
    sample_document_id: str,
    page_count: int,
) -> dict[str, Any]:
    """The definition with the boxes as its template regions (see the module docstring), as
    the document a client would send (to validate it as the API does, errors at their paths)."""
    document = definition.model_dump(mode="json")
    drawn = {box.name: box for box in boxes}
    fields: list[dict[str, Any]] = []
    for field in document["fields"]:
        others = [loc for loc in field["locators"] if loc.get("kind") != "region"]
        box = drawn.pop(field["name"], None)
        if box is None:
            fields.append({**field, "locators": others})
        else:
            fields.append({**field, "type": box.type.value, "locators": [_region(box), *others]})
    for box in boxes:
        if box.name in drawn:
            fields.append({"name": box.name, "type": box.type.value, "locators": [_region(box)]})
    document["fields"] = fields
    document["template"] = {
        **(document.get("template") or {}),
        "sample_document_id": sample_document_id,
        "page_count": page_count,
    }
    return document


def preview(
    sample: ReadDocument, definition: ExtractionWorkflowDefinition, boxes: list[CanvasBox]
) -> dict[str, FieldResult | None]:
    """What each box extracts from `sample` by itself (None: nothing), by field name. A box's
    field keeps what the workflow's field of that name needs beyond its locators (enum values,
    a pattern)."""
    known = {f.name: f for f in definition.fields}
    fields = []
    for box in boxes:
        base = known.get(box.name)
        extra = (
            {"enum_values": base.enum_values, "pattern": base.pattern} if base is not None else {}
        )
        fields.append(
            FieldDef(
                name=box.name,
                type=box.type,
                required=False,
                locators=[
                    RegionLocator(
                        page=box.page, box=box.box, anchor=box.anchor, anchor_box=box.anchor_box
                    )
                ],
                **extra,
            )
        )
    alone = definition.model_copy(update={"fields": fields, "template": None})
    result = extract_read_document(sample, alone)
    if isinstance(result, Rejected):
        return {box.name: None for box in boxes}
    return {box.name: result.fields.get(box.name) for box in boxes}
