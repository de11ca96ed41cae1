"""Exports: a batch's results as one streamed file (CSV or JSON Lines), one row per document."""
