"""Running the gap-fill itself (`llm.gapfill.fill`) on a real database against the local
model server: a tenant, a definition with one optional field the engine missed, and the
request the extract step would make for a file (its bytes' hash, the text OCR read)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.llm.clients import OpenAICompatible
from docflow.llm.config import LlmConfig
from docflow.llm.context import EXTRACT, VERIFY, Gap, GapRequest, Line, text_hash
from docflow.llm.gapfill import Filled, Where, fill
from docflow.tenants.service import create_tenant
from support.llm_server import ModelServer

DEFINITION = ExtractionWorkflowDefinition.model_validate(
    {
        "name": "orders",
        "fields": [
            {
                "name": "po_number",
                "required": False,
                "locators": [{"kind": "label", "labels": ["PO Number"]}],
            },
        ],
        "confidence_threshold": 0.5,
        "review_threshold": 0.8,
    }
)


@dataclass
class Filler:
    sessions: sessionmaker[Session]
    tenant_id: str
    model: ModelServer

    def fill(self, request: GapRequest, fields: dict[str, Any], document_id: str) -> Filled:
        config = LlmConfig(
            provider="openai", base_url=f"{self.model.url}/v1", models={"simple": "m"}
        )
        provider = OpenAICompatible(base_url=config.base_url, api_key="k", timeout=30)
        where = Where(self.tenant_id, "prj_1", "bat_1", document_id)
        return fill(
            self.sessions,
            provider,
            config,
            where,
            definition=DEFINITION,
            request=request,
            fields=fields,
        )


def filler(engine: Engine, model: ModelServer) -> Filler:
    sessions = db.make_write_session_factory(engine)
    with sessions() as session, session.begin():
        tenant_id = create_tenant(session, name="fill").id
    return Filler(sessions, tenant_id, model)


def reading(
    text: str, *, doubted: str | None = None, file_hash: str = "f" * 64
) -> tuple[GapRequest, dict[str, Any]]:
    """The request and the engine's fields for a file whose OCR read `text` (one line): the
    PO number missing, or read as `doubted` under review_threshold."""
    gap = Gap("po_number", VERIFY if doubted else EXTRACT, doubted, "simple")
    line = Line(1, text, (0.1, 0.1, 0.6, 0.12), 0.9)
    request = GapRequest((gap,), (line,), text_hash([text]), 10, 10, document_hash=file_hash)
    field = {
        "name": "po_number",
        "value": doubted,
        "raw": doubted,
        "confidence": 0.6 if doubted else 0.0,
    }
    return request, {"po_number": field}
