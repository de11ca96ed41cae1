"""Search: a derived, rebuildable projection of the tenant's documents (field values, names,
status and the engine's text), kept by a consumer of the document events, queried with SQLite
FTS5 (embedded) or PostgreSQL full-text search (distributed)."""
