"""The extraction workflow definition: which fields to find, how, and how sure to be.

This is the contract between the tenant's configuration (stored, versioned, edited through the
API or `docflow workflows apply -f FILE.yaml`) and the engine. Validation lives here so the API,
the CLI and the engine all refuse the same invalid definitions.

Every list and text the engine searches with is bounded (`MAX_*` below): label lookup costs the
number of labels times the words of a page, approximate matching the square of a label's length,
and each field one pass over the document, so an unbounded definition would let one workflow
occupy a worker for as long as it likes. Patterns are bounded in `patterns`.

Those bounds and the RE2 rule came after definitions were first stored: a version stored before
may break them. `read_stored` reads such a version as it was stored, so it can still be shown;
the engine must not run it (the workflows service says why, and its documents fail
`invalid_workflow`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Strict,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticKnownError, core_schema

from docflow.extraction.patterns import MAX_PATTERN_LENGTH, check_pattern
from docflow.extraction.profiles import DEFAULT_PROFILES, ProfileName

FIELD_NAME = r"^[a-z][a-z0-9_]{0,62}$"
MAX_FIELDS = 200
MAX_LOCATORS = 20  # per field
MAX_LABELS = 100  # per label locator or column
MAX_TOTAL_LABELS = 500  # in the whole definition: each is looked up on every page
MAX_LABEL_LENGTH = 100  # characters of a label, an anchor or an enum value
MAX_ENUM_VALUES = 200
MAX_COLUMNS = 50

_STORED = "stored_definition"  # validation context key: read as stored (see `read_stored`)


def _stored(info: ValidationInfo) -> bool:
    return isinstance(info.context, dict) and info.context.get(_STORED) is True


@dataclass(frozen=True, slots=True)
class AtMost:
    """`max_length` for a list or text, except in a definition read by `read_stored`: same
    error and JSON schema as pydantic's own."""

    limit: int

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.with_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        key = "maxLength" if json_schema.get("type") == "string" else "maxItems"
        return {**json_schema, key: self.limit}

    def _check(self, value: Any, info: ValidationInfo) -> Any:
        if len(value) <= self.limit or _stored(info):
            return value
        if isinstance(value, str):
            raise PydanticKnownError("string_too_long", {"max_length": self.limit})
        context = {"field_type": "List", "max_length": self.limit, "actual_length": len(value)}
        raise PydanticKnownError("too_long", context)


Label = Annotated[str, AtMost(MAX_LABEL_LENGTH)]
Labels = Annotated[list[Label], Field(min_length=1), AtMost(MAX_LABELS)]


class FieldType(StrEnum):
    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    MONEY = "money"
    DATE = "date"
    ENUM = "enum"
    REGEX = "regex"
    LINE_ITEMS = "line_items"


class DateOrder(StrEnum):
    DAY_FIRST = "DMY"
    MONTH_FIRST = "MDY"
    YEAR_FIRST = "YMD"


class ReadingPolicy(StrEnum):
    """Which OCR engines read a scanned page: Tesseract only (`fast`), PP-OCR only
    (`accurate`), or Tesseract first and PP-OCR again where required fields stay weak (`auto`).
    Text-layer PDF pages are never OCRed whatever the policy."""

    FAST = "fast"
    ACCURATE = "accurate"
    AUTO = "auto"


class ColdStart(StrEnum):
    """How a field is decided before its workflow version has measured it (see
    `docflow.trust`): sent to review (`review`), or by `review_threshold` as without learning
    (`thresholds`) until its first estimate."""

    REVIEW = "review"
    THRESHOLDS = "thresholds"


DEFAULT_TARGET_PRECISION = 0.98


class ComplexityTier(StrEnum):
    SIMPLE = "simple"
    STANDARD = "standard"
    COMPLEX = "complex"


# JSON scalars as they are written: pydantic's lax mode would read `false` as 0, `"10"` as 10,
# `1.0` as a page number and `1` or `"yes"` as true.
Number = Annotated[float, Strict()]
Whole = Annotated[int, Strict()]
Flag = Annotated[bool, Strict()]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Box(_Strict):
    """A rectangle in normalised page coordinates: (0, 0) top left, (1, 1) bottom right."""

    x0: Number = Field(ge=0, le=1)
    y0: Number = Field(ge=0, le=1)
    x1: Number = Field(ge=0, le=1)
    y1: Number = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Box:
        if self.x1 <= self.x0 or self.y1 <= self.y0:
            raise ValueError("box must have x0 < x1 and y0 < y1")
        return self


class RegionLocator(_Strict):
    """A region drawn on the template. With an anchor, the region moves with the anchor word."""

    kind: Literal["region"] = "region"
    page: Whole = Field(default=1, ge=1)
    box: Box
    anchor: Label | None = Field(default=None, description="text of an anchor word or phrase")
    anchor_box: Box | None = Field(
        default=None, description="where the anchor sat on the template page"
    )

    @model_validator(mode="after")
    def _anchor_complete(self) -> RegionLocator:
        if (self.anchor is None) != (self.anchor_box is None):
            raise ValueError("anchor and anchor_box go together")
        return self


class LabelLocator(_Strict):
    """Label anchors ("Invoice No", "Inv #"); the value sits to the right or below."""

    kind: Literal["label"] = "label"
    labels: Labels
    direction: Literal["right", "below", "any"] = "any"

    @field_validator("labels")
    @classmethod
    def _non_blank(cls, labels: list[str]) -> list[str]:
        if any(not label.strip() for label in labels):
            raise ValueError("labels must not be blank")
        return labels


class PatternLocator(_Strict):
    """A regular expression (RE2 syntax, see `patterns`) over each line of the page text; the
    first group (or the match) is the value."""

    kind: Literal["pattern"] = "pattern"
    pattern: Annotated[str, AtMost(MAX_PATTERN_LENGTH)] = Field(min_length=1)

    @field_validator("pattern")
    @classmethod
    def _runs_on_re2(cls, pattern: str, info: ValidationInfo) -> str:
        return pattern if _stored(info) else check_pattern(pattern)


Locator = Annotated[RegionLocator | LabelLocator | PatternLocator, Field(discriminator="kind")]

SCALAR_TYPES = frozenset(FieldType) - {FieldType.LINE_ITEMS}


class ColumnDef(_Strict):
    """A typed column of a line-item table, found by its header labels."""

    name: str = Field(pattern=FIELD_NAME)
    type: FieldType = FieldType.STRING
    labels: Labels
    required: Flag = False

    @field_validator("type")
    @classmethod
    def _scalar(cls, value: FieldType) -> FieldType:
        if value not in SCALAR_TYPES or value in (FieldType.ENUM, FieldType.REGEX):
            raise ValueError("a column is string, integer, decimal, money or date")
        return value


class FieldDef(_Strict):
    """One field to extract."""

    name: str = Field(pattern=FIELD_NAME)
    type: FieldType = FieldType.STRING
    required: Flag = True
    description: str = ""
    locators: Annotated[list[Locator], AtMost(MAX_LOCATORS)] = Field(default_factory=list)
    enum_values: Annotated[list[Label], AtMost(MAX_ENUM_VALUES)] = Field(
        default_factory=list, description="for type enum"
    )
    pattern: Annotated[str, AtMost(MAX_PATTERN_LENGTH)] | None = Field(
        default=None, description="for type regex: the whole value must match (RE2 syntax)"
    )
    columns: Annotated[list[ColumnDef], AtMost(MAX_COLUMNS)] = Field(
        default_factory=list, description="for type line_items"
    )
    complexity_tier: ComplexityTier | None = Field(
        default=None,
        exclude_if=lambda tier: tier is None,
        description="the language-model tier asked for this field (absent: the workflow's)",
    )

    @field_validator("pattern")
    @classmethod
    def _runs_on_re2(cls, pattern: str | None, info: ValidationInfo) -> str | None:
        return pattern if pattern is None or _stored(info) else check_pattern(pattern)

    @model_validator(mode="after")
    def _type_specifics(self) -> FieldDef:
        if self.type == FieldType.ENUM and not self.enum_values:
            raise ValueError(f"field {self.name!r}: type enum needs enum_values")
        if self.type == FieldType.REGEX and not self.pattern:
            raise ValueError(f"field {self.name!r}: type regex needs a pattern")
        if self.type == FieldType.LINE_ITEMS:
            if not self.columns:
                raise ValueError(f"field {self.name!r}: type line_items needs columns")
            names = [c.name for c in self.columns]
            if len(names) != len(set(names)):
                raise ValueError(f"field {self.name!r}: column names must be unique")
        elif self.columns:
            raise ValueError(f"field {self.name!r}: only line_items fields have columns")
        return self


class Template(_Strict):
    """The sample document the regions were drawn on (optional)."""

    sample_document_id: str | None = None
    page_count: Whole = Field(default=1, ge=1)
    page_width: Number | None = Field(default=None, gt=0)
    page_height: Number | None = Field(default=None, gt=0)


class ExtractionWorkflowDefinition(_Strict):
    """A tenant's extraction workflow, as the engine sees it."""

    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    fields: Annotated[list[FieldDef], AtMost(MAX_FIELDS)] = Field(min_length=1)
    confidence_threshold: Number = Field(default=0.5, ge=0, le=1)
    review_threshold: Number = Field(default=0.8, ge=0, le=1)
    tolerated_failure_percent: Number = Field(default=10.0, ge=0, le=100)
    # Earned trust (docflow.trust). Left out of the stored JSON at their defaults, so the
    # definitions stored before them keep their schema hash.
    target_precision: Number = Field(
        default=DEFAULT_TARGET_PRECISION,
        ge=0.5,
        le=1,
        exclude_if=lambda value: value == DEFAULT_TARGET_PRECISION,
        description="a field passes without review only from the confidence where its "
        "measured precision on reviewed documents reaches this",
    )
    qa_sample_rate: Number = Field(
        default=0.0,
        ge=0,
        le=1,
        exclude_if=lambda value: value == 0,
        description="the share of would-be SUCCEEDED documents sent to review as a sample",
    )
    cold_start: ColdStart = Field(
        default=ColdStart.REVIEW,
        exclude_if=lambda value: value == ColdStart.REVIEW,
        description="a field not yet measured goes to review (`review`) or is decided by "
        "review_threshold (`thresholds`)",
    )
    complexity_tier: ComplexityTier = ComplexityTier.STANDARD
    reading: ReadingPolicy = ReadingPolicy.AUTO
    date_order: DateOrder = DateOrder.DAY_FIRST
    template: Template | None = None
    profiles: Annotated[list[ProfileName], AtMost(len(ProfileName))] | None = Field(
        default=None,
        exclude_if=lambda profiles: profiles is None,
        description=(
            "named assumptions tied to field names or a locale, each at most once: "
            f"{', '.join(ProfileName)}; absent: all of them; []: none"
        ),
    )

    @field_validator("profiles")
    @classmethod
    def _profiles_once(cls, profiles: list[ProfileName] | None) -> list[ProfileName] | None:
        if profiles is not None and len(set(profiles)) != len(profiles):
            raise ValueError("each profile may be named once")
        return profiles

    @field_validator("fields")
    @classmethod
    def _labels_bounded(cls, fields: list[FieldDef], info: ValidationInfo) -> list[FieldDef]:
        count = sum(_label_count(f) for f in fields)
        if count > MAX_TOTAL_LABELS and not _stored(info):
            raise ValueError(
                f"at most {MAX_TOTAL_LABELS} labels in all (label locators, anchors and "
                f"columns), found {count}"
            )
        return fields

    @model_validator(mode="after")
    def _consistent(self) -> ExtractionWorkflowDefinition:
        names = [f.name for f in self.fields]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"field names must be unique: {', '.join(duplicates)}")
        if self.confidence_threshold > self.review_threshold:
            raise ValueError("confidence_threshold must not exceed review_threshold")
        return self

    @property
    def selected_profiles(self) -> tuple[ProfileName, ...]:
        """The profiles the engine applies: those selected, or the defaults when none is named."""
        return DEFAULT_PROFILES if self.profiles is None else tuple(self.profiles)

    def field(self, name: str) -> FieldDef:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


def read_stored(data: Any) -> ExtractionWorkflowDefinition:
    """A definition as this or an earlier release stored it, with the rules that came later
    (RE2 patterns, the `MAX_*` bounds) not applied: for showing it, never for running it
    (validate it without this to know whether the engine may)."""
    return ExtractionWorkflowDefinition.model_validate(data, context={_STORED: True})


def _label_count(field: FieldDef) -> int:
    count = sum(len(column.labels) for column in field.columns)
    for locator in field.locators:
        if isinstance(locator, LabelLocator):
            count += len(locator.labels)
        elif isinstance(locator, RegionLocator) and locator.anchor is not None:
            count += 1
    return count
