"""The statement counter of the benchmark suite: every statement of an engine is counted, by
its first words, and the file it writes always parses."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import create_engine, event, text

from docflow.kit.querycount import QueryCounter, statement_key


def test_statements_are_counted_by_kind_and_written(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'q.db'}")
    counter = QueryCounter(tmp_path / "queries.json")
    event.listen(engine, "before_cursor_execute", counter.on_execute)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
            for value in range(3):
                conn.execute(text("INSERT INTO t (x)\n   VALUES (:x)"), {"x": value})
            conn.execute(text("SELECT count(*) FROM t")).scalar()
    finally:
        event.remove(engine, "before_cursor_execute", counter.on_execute)
        engine.dispose()
    counter.write()
    written = json.loads((tmp_path / "queries.json").read_text())
    assert written["total"] == 5
    assert written["by_statement"]["INSERT INTO t (x) VALUES (?)"] == 3
    assert written["by_statement"]["SELECT count(*) FROM t"] == 1
    assert written["written_at"] > 0


def test_a_statement_key_is_short_and_whitespace_free() -> None:
    key = statement_key("SELECT   a,\n  b FROM " + "x" * 200)
    assert key.startswith("SELECT a, b FROM x")
    assert len(key) == 90
