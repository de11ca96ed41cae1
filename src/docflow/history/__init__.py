"""Execution history: every step of a batch's or a document's durable execution, read from
DBOS's step records and joined with the batch and document rows."""
