"""Queries for earned trust: a document's examples, a version's examples of a field, and the
estimates of a version's fields."""

from __future__ import annotations

from collections.abc import Sequence

from docflow.tenancy import TenantRepository
from docflow.trust.models import FieldEvidence, FieldTrust


class TrustRepository(TenantRepository):
    def replace_evidence(self, document_id: str, rows: Sequence[FieldEvidence]) -> None:
        """The document's examples become `rows` (none: it is no example)."""
        stmt = self.scoped_delete(FieldEvidence).where(FieldEvidence.document_id == document_id)
        self.session.execute(stmt.execution_options(synchronize_session=False))
        self.session.add_all(rows)
        self.session.flush()

    def examples(
        self, workflow_id: str, version: int, field: str, *, limit: int
    ) -> list[tuple[float, bool]]:
        """The `limit` most recent examples of a field, oldest first (ix_field_evidence_field)."""
        stmt = (
            self.base(FieldEvidence)
            .where(
                FieldEvidence.workflow_id == workflow_id,
                FieldEvidence.workflow_version == version,
                FieldEvidence.field == field,
            )
            .order_by(FieldEvidence.reviewed_at.desc(), FieldEvidence.document_id.desc())
            .limit(limit)
            .with_only_columns(FieldEvidence.confidence, FieldEvidence.correct)
        )
        return [(c, bool(r)) for c, r in reversed(self.session.execute(stmt).all())]

    def estimates(self, workflow_id: str, version: int) -> dict[str, FieldTrust]:
        """The version's field estimates by field name (pk_field_trust)."""
        stmt = self.base(FieldTrust).where(
            FieldTrust.workflow_id == workflow_id, FieldTrust.workflow_version == version
        )
        return {row.field: row for row in self.session.scalars(stmt)}

    def add_estimate(self, row: FieldTrust) -> None:
        self.session.add(row)
        self.session.flush()
