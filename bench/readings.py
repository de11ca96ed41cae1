"""Fit how two readings of a page combine (`auto`'s merge), and show what the merge gives.

    .venv/bin/python -m bench.readings --cache DIR [--count N] [--eval-dir DIR]

Reads the OCR sets (the generated scans and sroie-dev) with both tiers once into DIR (see
`bench.calibration_reads`; what is there is reused). For every document `auto` would re-read
(a required field missing or under review_threshold after Tesseract), the fields are extracted
from each reading and every labelled field becomes a pair: each reading's value, confidence and
whether it is right. The four cases of `extraction.reading.TWO_READINGS` (agree, disagree,
first_only, second_only) are fitted by logistic regression.

To show the fit holds on receipts it did not see, it is first fitted without the odd-numbered
sroie-dev receipts and checked on them; then it is fitted on everything (the coefficients to
put in `TWO_READINGS`). For the held-out receipts and for each set it prints, for the previous
merge rule (the more confident value, its confidence unchanged) and the fitted one: the share
of labelled fields right after the merge, the expected calibration error of the merged
confidences, and per review threshold the share of documents SUCCEEDED with the accuracy of
their fields.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.accuracy import ROOT, WORKFLOWS
from bench.calibration import THRESHOLDS, logistic
from bench.calibration_reads import load_set, read_sets
from docflow.evaluation.calibration import deciles, expected_calibration_error
from docflow.evaluation.compare import compare_value
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.fields.combine import type_family
from docflow.extraction.fields.confidence import decide
from docflow.extraction.model import ReadDocument
from docflow.extraction.pipeline import extract_read_document
from docflow.extraction.reading import (
    TWO_READINGS,
    family,
    labelled,
    merge_readings,
    needs_second_reading,
    pair_features,
)
from docflow.extraction.result import ExtractionResult, FieldResult, Reading
from docflow.extraction.workflow_file import load_workflow_file

OCR_SETS = (
    "generated scan 300 dpi mild",
    "generated scan 300 dpi medium",
    "generated scan 300 dpi hard",
    "generated scan 200 dpi mild",
    "sroie-dev",
)
HELD_OUT = "sroie-dev"


@dataclass(frozen=True, slots=True)
class Pair:
    """One document `auto` re-reads: both readings' results and the labels."""

    set: str
    index: int
    name: str
    definition: ExtractionWorkflowDefinition
    document: ReadDocument
    first: ExtractionResult
    second: ExtractionResult
    labels: dict[str, str]

    def right(self, field: FieldResult | None) -> bool:
        if field is None or field.value is None:
            return False
        kind = next(f.type for f in self.definition.fields if f.name == field.name)
        return compare_value(field.name, kind, self.labels[field.name], field.value).correct

    def labelled_fields(self) -> list[str]:
        return [
            f.name
            for f in self.definition.fields
            if f.type != FieldType.LINE_ITEMS and f.name in self.labels
        ]

    def is_text(self, name: str) -> bool:
        kind = next(f.type for f in self.definition.fields if f.name == name)
        return type_family(kind) == "text"


def pairs_of(cache: Path, name: str, definitions: Mapping[str, ExtractionWorkflowDefinition]):
    firsts = {r.name: r for r in load_set(cache, name)}
    seconds = {r.name: r for r in load_set(cache, name, "ppocr")}
    pairs: list[Pair] = []
    for index, (doc_name, read) in enumerate(sorted(firsts.items())):
        again = seconds.get(doc_name)
        if not isinstance(read.document, ReadDocument) or again is None:
            continue
        if not isinstance(again.document, ReadDocument):
            continue
        definition = definitions[read.workflow]
        first = extract_read_document(read.document, definition)
        second = extract_read_document(again.document, definition)
        if not isinstance(first, ExtractionResult) or not isinstance(second, ExtractionResult):
            continue
        first = labelled(first, read.document, Reading.TESSERACT)
        if not needs_second_reading(first, read.document, definition):
            continue
        second = labelled(second, again.document, Reading.PPOCR)
        pairs.append(
            Pair(name, index, doc_name, definition, read.document, first, second, read.fields)
        )
    return pairs


def samples(pairs: Sequence[Pair]) -> dict[str, tuple[list[dict[str, float]], list[bool]]]:
    """Per case of `TWO_READINGS`, the features and outcomes of every labelled field."""
    cases: dict[str, tuple[list[dict[str, float]], list[bool]]] = {
        case: ([], []) for case in TWO_READINGS
    }

    def add(case: str, features: dict[str, float], right: bool) -> None:
        cases[case][0].append(features)
        cases[case][1].append(right)

    for pair in pairs:
        for name in pair.labelled_fields():
            one, two = pair.first.fields.get(name), pair.second.fields.get(name)
            text = pair.is_text(name)

            def x(
                case: str,
                own: FieldResult,
                other: FieldResult | None,
                second: FieldResult | None = two,
                text: bool = text,
            ) -> dict[str, float]:
                assert own.value is not None
                return pair_features(
                    case,
                    own.confidence,
                    None if other is None else other.confidence,
                    second=own is second,
                    kind=family(own.value, text=text),
                )

            has_one = one is not None and one.value is not None
            has_two = two is not None and two.value is not None
            if has_one and has_two:
                assert one is not None and two is not None
                if one.value == two.value:
                    add("agree", x("agree", one, two), pair.right(one))
                else:
                    add("disagree", x("disagree", one, two), pair.right(one))
                    add("disagree", x("disagree", two, one), pair.right(two))
            elif has_one:
                assert one is not None
                add("first_only", x("first_only", one, None), pair.right(one))
            elif has_two:
                assert two is not None
                add("second_only", x("second_only", two, None), pair.right(two))
    return cases


MIN_SAMPLES = 20
# Documents of one issuer the fit takes at most: sroie-dev holds a dozen receipts of one
# bakery and several of a few shops, whose one layout would otherwise set the coefficients.
PER_ISSUER = 3
ISSUER_FIELDS = ("company", "vendor_name")


def per_issuer(pairs: Sequence[Pair], at_most: int = PER_ISSUER) -> list[Pair]:
    """`pairs` with at most `at_most` documents per labelled issuer name (in order)."""
    seen: dict[str, int] = {}
    kept = []
    for pair in pairs:
        issuer = next((pair.labels[f] for f in ISSUER_FIELDS if f in pair.labels), pair.name)
        key = f"{pair.set}:{''.join(issuer.split()).lower()}"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= at_most:
            kept.append(pair)
    return kept


def fit_two_readings(pairs: Sequence[Pair]) -> dict[str, dict[str, float]]:
    """Each case fitted on its fields (at most `PER_ISSUER` documents per issuer); a case with
    fewer than `MIN_SAMPLES` fields, or whose
    fields were all right or all wrong, keeps its confidence as it is (weight 1 on its own
    logit)."""
    fitted: dict[str, dict[str, float]] = {}
    for case, (xs, ys) in samples(per_issuer(pairs)).items():
        if len(xs) >= MIN_SAMPLES and 0 < sum(ys) < len(ys):
            fitted[case] = logistic(xs, ys)
        else:
            fitted[case] = {name: 0.0 for name in TWO_READINGS[case]}
            fitted[case]["first" if case != "second_only" else "second"] = 1.0
        print(f"  {case}: {len(xs)} fields, {sum(ys)} right")
    return fitted


Merge = Callable[[Pair], ExtractionResult]


def previous_merge(pair: Pair) -> ExtractionResult:
    """The rule before the fit: the more confident value, its confidence unchanged."""
    fields = {}
    for name, one in pair.first.fields.items():
        two = pair.second.fields.get(name)
        if two is None or two.value is None:
            fields[name] = one
        elif one.value is None or two.confidence > one.confidence:
            fields[name] = two
        else:
            fields[name] = one
    tables = merge_readings(pair.first, pair.second, pair.definition)[1]
    return decide(pair.document, pair.definition, fields, tables)


def fitted_merge(coefficients: Mapping[str, Mapping[str, float]]) -> Merge:
    def merge(pair: Pair) -> ExtractionResult:
        fields, tables = merge_readings(pair.first, pair.second, pair.definition, coefficients)
        return decide(pair.document, pair.definition, fields, tables)

    return merge


def report(title: str, pairs: Sequence[Pair], merge: Merge) -> list[str]:
    found: list[tuple[float, bool]] = []
    by_field: dict[str, list[bool]] = {}
    documents: list[tuple[float, list[tuple[bool, bool]]]] = []
    for pair in pairs:
        result = merge(pair)
        required = {f.name for f in pair.definition.fields if f.required}
        marks = []
        for name in pair.labelled_fields():
            field = result.fields.get(name)
            ok = pair.right(field)
            marks.append((ok, name in required))
            by_field.setdefault(name, []).append(ok)
            if field is not None and field.value is not None:
                found.append((field.confidence, ok))
        documents.append((result.confidence, marks))
    ece = expected_calibration_error(deciles(found))
    every = [ok for oks in by_field.values() for ok in oks]
    per_field = ", ".join(f"{name} {_share(oks)}" for name, oks in by_field.items())
    lines = [f"  {title}: fields right {_share(every)} ({per_field}), ECE {ece:.3f}"]
    for threshold in THRESHOLDS:
        sure = [marks for confidence, marks in documents if confidence >= threshold]
        fields = [ok for marks in sure for ok, _ in marks]
        required = [ok for marks in sure for ok, needed in marks if needed]
        lines.append(
            f"    review_threshold {threshold:.3f}: SUCCEEDED {len(sure)}/{len(documents)},"
            f" their fields right {_share(fields)} (required {_share(required)})"
        )
    return lines


def _share(marks: Sequence[bool]) -> str:
    return f"{sum(marks) / len(marks) * 100:.1f}%" if marks else "n/a"


POLICY_THRESHOLDS = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)


def policy_curve(
    cache: Path,
    name: str,
    definitions: Mapping[str, ExtractionWorkflowDefinition],
    coefficients: Mapping[str, Mapping[str, float]],
    keep: Callable[[int], bool] = lambda index: True,
) -> list[str]:
    """The whole `auto` policy per review_threshold (which also decides what is re-read) on the
    documents of set `name` whose index `keep` accepts: SUCCEEDED and FAILED shares, the
    accuracy of the SUCCEEDED documents' fields (all labelled, and required), the share of
    documents re-read and every field's accuracy."""
    firsts = {r.name: r for r in load_set(cache, name)}
    seconds = {r.name: r for r in load_set(cache, name, "ppocr")}
    lines = []
    for threshold in POLICY_THRESHOLDS:
        statuses: dict[str, int] = {}
        sure: list[bool] = []
        sure_required: list[bool] = []
        by_field: dict[str, list[bool]] = {}
        reread = count = 0
        for index, (doc_name, read) in enumerate(sorted(firsts.items())):
            if not keep(index):
                continue
            count += 1
            definition = definitions[read.workflow].model_copy(
                update={"review_threshold": threshold}
            )
            result: ExtractionResult | None = None
            if isinstance(read.document, ReadDocument):
                first = extract_read_document(read.document, definition)
                if isinstance(first, ExtractionResult):
                    result = labelled(first, read.document, Reading.TESSERACT)
                    again = seconds.get(doc_name)
                    if needs_second_reading(result, read.document, definition):
                        reread += 1
                        if again is not None and isinstance(again.document, ReadDocument):
                            second = extract_read_document(again.document, definition)
                            if isinstance(second, ExtractionResult):
                                second = labelled(second, again.document, Reading.PPOCR)
                                fields, tables = merge_readings(
                                    result, second, definition, coefficients
                                )
                                result = decide(read.document, definition, fields, tables)
            status = result.status.value if result is not None else "FAILED"
            statuses[status] = statuses.get(status, 0) + 1
            pair = Pair(
                name, index, doc_name, definition, read.document, result, result, read.fields
            )  # type: ignore[arg-type]
            required = {f.name for f in definition.fields if f.required}
            for field in pair.labelled_fields():
                ok = result is not None and pair.right(result.fields.get(field))
                by_field.setdefault(field, []).append(ok)
                if status == "SUCCEEDED":
                    sure.append(ok)
                    if field in required:
                        sure_required.append(ok)
        per_field = ", ".join(f"{n} {_share(oks)}" for n, oks in by_field.items())
        lines.append(
            f"  review_threshold {threshold:.2f}:"
            f" SUCCEEDED {_pct(statuses.get('SUCCEEDED', 0), count)},"
            f" FAILED {_pct(statuses.get('FAILED', 0), count)}; SUCCEEDED fields right"
            f" {_share(sure)} (required {_share(sure_required)}); re-read {_pct(reread, count)};"
            f" {per_field}"
        )
    return lines


def _pct(part: int, whole: int) -> str:
    return f"{part / max(1, whole) * 100:.0f}%"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--count", type=int, default=21, help="generated documents per corpus")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    for engine in ("tesseract", "ppocr"):
        read_sets(
            args.cache,
            count=args.count,
            seed=args.seed,
            eval_dir=args.eval_dir,
            workers=args.workers,
            engine=engine,
            names=OCR_SETS,
        )
    definitions = {name: load_workflow_file(path) for name, path in WORKFLOWS.items()}
    by_set = {name: pairs_of(args.cache, name, definitions) for name in OCR_SETS}
    everything = [p for pairs in by_set.values() for p in pairs]
    held_out = [p for p in by_set[HELD_OUT] if p.index % 2 == 1]
    train = [p for p in everything if not (p.set == HELD_OUT and p.index % 2 == 1)]
    print(f"re-read documents: {len(everything)} ({len(held_out)} held-out {HELD_OUT} receipts)")
    partial = fit_two_readings(train)
    print(f"\nfitted without the held-out receipts: {partial}")
    print(f"{HELD_OUT}, odd-numbered receipts (not in that fit):")
    print("\n".join(report("previous merge", held_out, previous_merge)))
    print("\n".join(report("fitted merge", held_out, fitted_merge(partial))))
    print(f"the whole `auto` policy on the held-out {HELD_OUT} receipts, that fit:")
    odd = policy_curve(args.cache, HELD_OUT, definitions, partial, lambda i: i % 2 == 1)
    print("\n".join(odd))
    final = fit_two_readings(everything)
    print(f"\nTWO_READINGS = {final}")
    print(f"the whole `auto` policy on every {HELD_OUT} receipt, the final fit:")
    print("\n".join(policy_curve(args.cache, HELD_OUT, definitions, final)))
    for name, pairs in by_set.items():
        if not pairs:
            continue
        print(f"\n{name}: {len(pairs)} re-read documents")
        print("\n".join(report("previous merge", pairs, previous_merge)))
        print("\n".join(report("fitted merge", pairs, fitted_merge(final))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
