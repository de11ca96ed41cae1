"""Two versions of a workflow side by side on labelled documents: per field, how often each
gets the truth right (`docflow.evaluation.compare.compare_value`, the one comparison every
evaluation uses), which documents changed verdict, and which fields lose."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from docflow.errors import Conflict
from docflow.evaluation.compare import compare_value
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.review.examples import LabelledDocument

# The documents whose verdicts changed that an answer lists (it counts them all).
MAX_CHANGED_DOCUMENTS = 50


class AccuracyRegression(Conflict):
    code = "accuracy_regression"


@dataclass(frozen=True, slots=True)
class FieldScore:
    field: str
    labelled: int
    corrected: int
    current_correct: int
    candidate_correct: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """A field of one document whose verdict differs between the two versions."""

    field: str
    expected: str
    current: str | None
    candidate: str | None
    fixed: bool  # True: the candidate gets it right and the current version did not


@dataclass(frozen=True, slots=True)
class ChangedDocument:
    document_id: str
    name: str
    fields: tuple[Verdict, ...]


@dataclass(frozen=True, slots=True)
class Skipped:
    document_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Both versions' accuracy on the reviewed documents evaluated."""

    workflow_id: str
    current_version: int
    documents: int
    fields: tuple[FieldScore, ...]
    changed: tuple[ChangedDocument, ...]
    skipped: tuple[Skipped, ...]
    note: str | None = None

    @property
    def regressions(self) -> list[str]:
        """The fields the candidate gets right less often (and "overall" when it does so in
        total)."""
        losing = [f.field for f in self.fields if f.candidate_correct < f.current_correct]
        if sum(f.candidate_correct for f in self.fields) < sum(
            f.current_correct for f in self.fields
        ):
            losing.append("overall")
        return losing


Found = dict[str, str | None]
Run = tuple[LabelledDocument, Found, Found]


def scored_fields(
    baseline: ExtractionWorkflowDefinition, candidate: ExtractionWorkflowDefinition
) -> dict[str, FieldType]:
    """The fields scored, in the baseline's order then the candidate's new ones, each with the
    type its values compare as (the baseline's, which labelled them)."""
    kinds: dict[str, FieldType] = {}
    for definition in (baseline, candidate):
        for f in definition.fields:
            if f.type != FieldType.LINE_ITEMS:
                kinds.setdefault(f.name, f.type)
    return kinds


def score(
    workflow_id: str,
    version: int,
    baseline: ExtractionWorkflowDefinition,
    candidate: ExtractionWorkflowDefinition,
    runs: Sequence[Run],
    skipped: tuple[Skipped, ...],
    note: str | None,
) -> Evaluation:
    kinds = scored_fields(baseline, candidate)
    counts = {name: [0, 0, 0, 0] for name in kinds}  # labelled, corrected, current, candidate
    changed: list[ChangedDocument] = []
    for example, current, proposed in runs:
        verdicts = []
        for name, kind in kinds.items():
            expected = example.truth.get(name)
            if expected is None:
                continue
            now = compare_value(name, kind, expected, current.get(name)).correct
            then = compare_value(name, kind, expected, proposed.get(name)).correct
            tally = counts[name]
            tally[0] += 1
            tally[1] += name in example.corrected
            tally[2] += now
            tally[3] += then
            if now != then:
                verdicts.append(
                    Verdict(name, expected, current.get(name), proposed.get(name), fixed=then)
                )
        if verdicts:
            changed.append(ChangedDocument(example.document_id, example.name, tuple(verdicts)))
    fields = tuple(FieldScore(name, *tally) for name, tally in counts.items() if tally[0])
    return Evaluation(
        workflow_id=workflow_id,
        current_version=version,
        documents=len(runs),
        fields=fields,
        changed=tuple(changed),
        skipped=skipped,
        note=note,
    )


def require_no_regression(evaluation: Evaluation) -> None:
    """AccuracyRegression (409 `accuracy_regression`, listing `fields`) when the candidate
    loses accuracy on any field or overall."""
    losing = evaluation.regressions
    if losing:
        raise AccuracyRegression(
            "the new version is less accurate than version "
            f"{evaluation.current_version} on the workflow's reviewed documents: "
            + ", ".join(losing),
            fields=losing,
            documents=evaluation.documents,
        )
