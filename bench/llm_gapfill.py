"""Language-model gap-fill on sroie-dev with the deterministic test model.

    .venv/bin/python -m bench.llm_gapfill [--model oracle|rules] [--cache DIR] [--count N]
        [--eval-dir DIR]

Reads sroie-dev with Tesseract once into DIR (`bench.calibration_reads`; a set already there
is reused), extracts each receipt with examples/receipt.yaml, then runs the real gap-fill
(`llm.gapfill.fill`: cache, ledger, grounding, on a temporary SQLite database) through the
real OpenAI client against the local model server of the tests (`tests/support/llm_server`),
which answers only from the lines it is sent. With `--model oracle` (the default) the bench
tells the server each receipt's labelled values and the server answers a field's true value
only when it is present in the lines sent, else null (a model that is right whenever the
context holds the answer); with `--model rules` it answers by the simple rules the tests use.
Prints and writes to bench/results/llm-gapfill-<date>.json (`llm-gapfill-rules-<date>.json`):
- the share of labelled fields that reach the model (missing or under review_threshold);
- the fields it fixes (wrong before, right after) and breaks (right before, wrong after);
- the doubted values it confirms (and how many of them were right); the values it corrects
  (a grounded answer that disagrees with a doubted engine value becomes the field's value,
  held for review with the engine's value beside it), how many of those are now right and how
  many engine values were right; the answers dropped (not grounded, or not of the field's
  type); the documents held for review because of a model-only value;
- of the labelled fields asked, how many have their true value in the lines sent and in the
  whole document text (the same test as the oracle's), and their ratio: the recall of the
  context filter;
- input tokens per document with context filtering against the same prompts carrying the
  whole text (goal: at least 60% fewer);
- the cached-prefix share of input tokens from the second document on (goal: at least 50%);
- the calls a second run of the same documents makes (goal: 0);
- a budget of N calls under concurrency: a second tenant with a monthly budget of N calls fills
  the documents that ask on 8 threads at once (its own result cache, empty), and the calls the
  model server received are counted (goal: exactly N, none past the budget).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.accuracy import ROOT, WORKFLOWS
from bench.calibration_reads import load_set, read_sets
from docflow import db
from docflow.evaluation.compare import compare_value
from docflow.extraction.definition import ExtractionWorkflowDefinition, FieldType
from docflow.extraction.pipeline import extract_read_document
from docflow.extraction.result import ExtractionResult
from docflow.extraction.workflow_file import load_workflow_file
from docflow.llm.clients import OpenAICompatible
from docflow.llm.config import LlmConfig
from docflow.llm.context import GapRequest, document_lines, gap_request, tokens
from docflow.llm.gapfill import Where, fill, tasks
from docflow.llm.grounding import rescore
from docflow.llm.prompt import build, prefix
from docflow.llm.repository import LlmRepository
from docflow.tenants.service import create_tenant

sys.path.insert(0, str(ROOT / "tests"))
from support.llm_server import ModelServer, Oracle, present, serving_model

MODEL = "deterministic"


def _documents(cache: Path, eval_dir: Path, count: int | None) -> list[Any]:
    read_sets(cache, count=0, seed=0, eval_dir=eval_dir, workers=2, names=["sroie-dev"])
    reads = [r for r in load_set(cache, "sroie-dev") if not hasattr(r.document, "code")]
    return reads[:count] if count else reads


def _whole_text(
    model: ModelServer,
    definition: ExtractionWorkflowDefinition,
    request: GapRequest,
    document: Any,
) -> tuple[int, int]:
    """Input tokens and calls of the same calls carrying every line of the document."""
    provider = OpenAICompatible(base_url=f"{model.url}/v1", api_key="bench", timeout=30)
    lines = document_lines(document)
    total = calls = 0
    for _task, _tier, gaps in tasks(request.gaps):
        answer = provider.complete(build(definition, gaps, lines), model="whole-text")
        total += answer.usage.input_tokens
        calls += 1
    return total, calls


def _extracted(document: Any, definition: ExtractionWorkflowDefinition) -> ExtractionResult:
    result = extract_read_document(document, definition)
    assert isinstance(result, ExtractionResult)
    return result


def _score(
    definition: ExtractionWorkflowDefinition, labels: dict[str, str], fields: dict[str, Any]
) -> dict[str, bool]:
    kinds = {f.name: f.type for f in definition.fields}
    return {
        name: compare_value(
            name, kinds.get(name, FieldType.STRING), want, (fields.get(name) or {}).get("value")
        ).correct
        for name, want in labels.items()
        if name in kinds
    }


def _fields(document: Any, definition: ExtractionWorkflowDefinition) -> dict[str, Any]:
    return {n: asdict(f) for n, f in _extracted(document, definition).fields.items()}


def _request(document: Any, definition: ExtractionWorkflowDefinition) -> GapRequest | None:
    budget = LlmConfig().context_tokens
    return gap_request(document, definition, _fields(document, definition), budget_tokens=budget)


def _ledger(engine: Any, tenant_id: str, document_id: str) -> list[Any]:
    with db.make_session_factory(engine)() as session:
        return LlmRepository(session, tenant_id).calls_of_document(document_id)


def run(cache: Path, eval_dir: Path, count: int | None, *, oracle: bool) -> dict[str, Any]:
    definition = load_workflow_file(WORKFLOWS["receipt"])
    reads = _documents(cache, eval_dir, count)
    with tempfile.TemporaryDirectory() as tmp, serving_model() as model:
        url = f"sqlite:///{tmp}/bench.db"
        db.run_migrations(url)
        engine = db.make_engine(url)
        sessions = db.make_write_session_factory(engine)
        with sessions() as session, session.begin():
            tenant_id = create_tenant(session, name="bench").id
        config = LlmConfig(provider="openai", base_url=f"{model.url}/v1", models={"simple": MODEL})
        provider = OpenAICompatible(base_url=config.base_url, api_key="bench", timeout=30)
        rows: list[dict[str, Any]] = []
        fixed = tokens(prefix(definition))  # the prefix's tokens, the same in every call
        counts = dict.fromkeys(
            ("fields", "asked", "fixed", "broken", "confirmed", "confirmed_right"), 0
        )
        counts.update(succeeded_before=0, succeeded_after=0, in_context=0, in_document=0)
        counts.update(corrected=0, corrected_right=0, corrected_engine_right=0, dropped=0)
        counts.update(held=0)
        kinds = {f.name: f.type for f in definition.fields}
        for read in reads:
            fields = _fields(read.document, definition)
            before = _score(definition, read.fields, fields)
            counts["fields"] += len(before)
            request = _request(read.document, definition)
            if request is None:
                continue
            asked = [g.name for g in request.gaps if g.name in before]
            counts["asked"] += len(asked)
            every = list(document_lines(read.document))
            for name in asked:
                truth, order = read.fields[name], definition.date_order
                sent = present(name, kinds[name], truth, list(request.lines), date_order=order)
                anywhere = present(name, kinds[name], truth, every, date_order=order)
                counts["in_context"] += sent is not None
                counts["in_document"] += anywhere is not None
            truth = {n: v for n, v in read.fields.items() if n in kinds}
            model.state.oracle = Oracle(truth, definition.date_order) if oracle else None
            where = Where(tenant_id, "prj_bench", "bat_bench", read.name)
            filled = fill(
                sessions,
                provider,
                config,
                where,
                definition=definition,
                request=request,
                fields=fields,
            )
            after = _score(definition, read.fields, filled.fields)
            counts["fixed"] += sum(1 for n in before if after[n] and not before[n])
            counts["broken"] += sum(1 for n in before if before[n] and not after[n])
            confirmed = [
                n
                for n in before
                if filled.fields[n].get("reading") == "llm"
                and filled.fields[n]["llm"]["task"] == "verify"
                and "alternative" not in filled.fields[n]
            ]
            counts["confirmed"] += len(confirmed)
            counts["confirmed_right"] += sum(1 for n in confirmed if before[n])
            corrected = [n for n in before if "alternative" in filled.fields[n]]
            counts["corrected"] += len(corrected)
            counts["corrected_right"] += sum(1 for n in corrected if after[n])
            counts["corrected_engine_right"] += sum(1 for n in corrected if before[n])
            counts["dropped"] += sum(
                1 for n in before if "dropped" in (filled.fields[n].get("llm") or {})
            )
            counts["held"] += rescore({"fields": filled.fields}, definition)[
                0
            ] != "SUCCEEDED" and any(filled.fields[n].get("needs_review") for n in filled.fields)
            counts["succeeded_before"] += rescore({"fields": fields}, definition)[0] == "SUCCEEDED"
            counts["succeeded_after"] += (
                rescore({"fields": filled.fields}, definition)[0] == "SUCCEEDED"
            )
            calls = _ledger(engine, tenant_id, read.name)
            whole, whole_calls = _whole_text(model, definition, request, read.document)
            rows.append(
                {
                    "name": read.name,
                    "calls": len(calls),
                    "input_tokens": sum(c.input_tokens for c in calls),
                    "cached_tokens": sum(c.cached_tokens for c in calls),
                    "document_tokens": sum(c.input_tokens for c in calls) - len(calls) * fixed,
                    "whole_text_tokens": whole,
                    "whole_document_tokens": whole - whole_calls * fixed,
                }
            )
        first = model.state.calls("openai")
        for read in reads:  # the same documents again: every answer from the cache
            request = _request(read.document, definition)
            if request is not None:
                where = Where(tenant_id, "prj_bench", "bat_bench", read.name)
                fields = _fields(read.document, definition)
                fill(
                    sessions,
                    provider,
                    config,
                    where,
                    definition=definition,
                    request=request,
                    fields=fields,
                )
        second_run_calls = model.state.calls("openai") - first
        budget = _budget_run(sessions, model, provider, config, definition, reads)
        engine.dispose()
    return _report(rows, len(reads), counts, second_run_calls, budget, oracle=oracle)


BUDGET_THREADS = 8


def _budget_run(
    sessions: Any,
    model: ModelServer,
    provider: OpenAICompatible,
    config: LlmConfig,
    definition: ExtractionWorkflowDefinition,
    reads: list[Any],
) -> dict[str, int]:
    """A new tenant with a budget of N calls (a third of the documents that ask, at least 1)
    fills every document that asks on `BUDGET_THREADS` threads at once: the budget, the
    documents and the calls the model server received."""
    asking = [(r, q) for r in reads if (q := _request(r.document, definition)) is not None]
    with sessions() as session, session.begin():
        tenant_id = create_tenant(session, name="bench budget").id
    limit = max(1, len(asking) // 3)
    limited = replace(config, monthly_calls={tenant_id: limit})
    model.state.oracle = None
    before = model.state.calls("openai")

    def one(pair: tuple[Any, GapRequest]) -> None:
        read, request = pair
        fill(
            sessions,
            provider,
            limited,
            Where(tenant_id, "prj_bench", "bat_budget", read.name),
            definition=definition,
            request=request,
            fields=_fields(read.document, definition),
        )

    with ThreadPoolExecutor(BUDGET_THREADS) as pool:
        list(pool.map(one, asking))
    calls = model.state.calls("openai") - before
    return {"budget_calls": limit, "documents_asking": len(asking), "calls": calls}


def _report(
    rows: list[dict[str, Any]],
    documents: int,
    counts: dict[str, int],
    second_run_calls: int,
    budget: dict[str, int],
    *,
    oracle: bool,
) -> dict[str, Any]:
    filtered = [r["input_tokens"] for r in rows]
    whole = [r["whole_text_tokens"] for r in rows]
    text = [r["document_tokens"] for r in rows]
    whole_text = [r["whole_document_tokens"] for r in rows]
    later = rows[1:]
    cached_share = sum(r["cached_tokens"] for r in later) / max(
        1, sum(r["input_tokens"] for r in later)
    )
    saving = 1 - sum(text) / max(1, sum(whole_text))
    with_prefix = 1 - sum(filtered) / max(1, sum(whole))
    uncached = sum(r["input_tokens"] - r["cached_tokens"] for r in later)
    uncached_whole = sum(r["whole_text_tokens"] for r in later) - sum(
        r["cached_tokens"] for r in later
    )
    return {
        "set": "sroie-dev",
        "model": "oracle" if oracle else "rules",
        "documents": documents,
        "documents_asking": len(rows),
        "calls": sum(r["calls"] for r in rows),
        "fields": counts["fields"],
        "fields_asked": counts["asked"],
        "share_asked": round(counts["asked"] / max(1, counts["fields"]), 4),
        "fields_fixed": counts["fixed"],
        "fields_broken": counts["broken"],
        "fields_asked_true_value_in_context": counts["in_context"],
        "fields_asked_true_value_in_document": counts["in_document"],
        "context_recall": round(counts["in_context"] / max(1, counts["in_document"]), 4),
        "fields_confirmed": counts["confirmed"],
        "fields_confirmed_right": counts["confirmed_right"],
        "fields_corrected": counts["corrected"],
        "fields_corrected_right": counts["corrected_right"],
        "fields_corrected_engine_was_right": counts["corrected_engine_right"],
        "fields_answer_dropped": counts["dropped"],
        "documents_held_for_model_values": counts["held"],
        "documents_asking_succeeded_before": counts["succeeded_before"],
        "documents_asking_succeeded_after": counts["succeeded_after"],
        "document_tokens_per_document": _mean(text),
        "whole_document_tokens_per_document": _mean(whole_text),
        "document_token_saving": round(saving, 4),
        "input_tokens_per_document": _mean(filtered),
        "whole_text_input_tokens_per_document": _mean(whole),
        "input_token_saving_prefix_included": round(with_prefix, 4),
        "uncached_input_token_saving_from_second": round(1 - uncached / max(1, uncached_whole), 4),
        "cached_prefix_share_from_second": round(cached_share, 4),
        "second_run_calls": second_run_calls,
        "budget_calls": budget["budget_calls"],
        "budget_documents_asking_concurrently": budget["documents_asking"],
        "budget_calls_made": budget["calls"],
        "targets": {
            "document_token_saving >= 0.6": saving >= 0.6,
            "cached_prefix_share_from_second >= 0.5": cached_share >= 0.5,
            "second_run_calls == 0": second_run_calls == 0,
            "budget_calls_made == budget_calls": budget["calls"] == budget["budget_calls"],
        },
    }


def _mean(values: list[int]) -> float:
    return round(statistics.fmean(values), 1) if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=None, help="keep the OCR reading here")
    parser.add_argument("--eval-dir", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--count", type=int, default=None)
    parser.add_argument("--model", choices=("oracle", "rules"), default="oracle")
    args = parser.parse_args()
    oracle = args.model == "oracle"
    with tempfile.TemporaryDirectory(prefix="docflow-llm-") as tmp:
        report = run(args.cache or Path(tmp), args.eval_dir, args.count, oracle=oracle)
    mode = "" if oracle else "rules-"
    out = ROOT / "bench" / "results" / f"llm-gapfill-{mode}{datetime.now(UTC).date()}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    table = Table("figure", "value")
    for name, value in report.items():
        if name != "targets":
            table.add_row(name, str(value))
    for target, met in report["targets"].items():
        table.add_row(f"target {target}", "met" if met else "NOT met")
    Console().print(table)
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
