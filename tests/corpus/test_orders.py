"""The purchase-order set: reproducible bytes, labels that match the printed page, recurring
issuers each in its own layout, and a folder `docflow eval --dataset` reads."""

from __future__ import annotations

import hashlib
from datetime import date
from decimal import Decimal
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from typer.testing import CliRunner

from docflow.corpus.cli import app
from docflow.corpus.order_layouts import ORDER_LAYOUTS
from docflow.corpus.orders import generate_orders, issuers, make_order
from docflow.evaluation.dataset import load_dataset
from docflow.extraction.workflow_file import load_workflow_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _text(pdf: bytes) -> str:
    document = pdfium.PdfDocument(pdf)
    try:
        return " ".join(document[0].get_textpage().get_text_range().split())
    finally:
        document.close()


def test_same_seed_gives_the_same_bytes(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        generate_orders(tmp_path / folder, count=4, seed=3)
    digests = [
        {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / f).iterdir()}
        for f in ("a", "b")
    ]
    assert len(digests[0]) == 8
    assert digests[0] == digests[1]
    assert make_order(3, 0).pdf != make_order(4, 0).pdf


@pytest.mark.parametrize("index", range(12))
def test_text_layer_prints_every_labelled_value(index: int) -> None:
    order = make_order(9, index)
    text = _text(order.pdf)
    fields = order.truth["fields"]
    assert set(order.printed) == set(fields)
    for name, pieces in order.printed.items():
        for piece in pieces:
            assert piece in text, f"{order.name}: {name} printed as {piece!r} not in text layer"
    for name in ("order_date", "delivery_date"):
        if name in fields:
            date.fromisoformat(fields[name])
    assert Decimal(fields["total"]).as_tuple().exponent == -2


def test_issuers_recur_each_in_its_own_layout() -> None:
    pool = issuers(5)
    assert {i.layout for i in pool} == set(ORDER_LAYOUTS)
    orders = [make_order(5, i, pool) for i in range(30)]
    by_buyer: dict[str, set[str]] = {}
    for order in orders:
        by_buyer.setdefault(order.truth["fields"]["buyer"], set()).add(order.layout)
    assert len(by_buyer) <= len(pool) and all(len(ls) == 1 for ls in by_buyer.values())
    assert max(sum(o.truth["fields"]["buyer"] == b for o in orders) for b in by_buyer) >= 3


def test_cli_writes_a_dataset_the_workflow_names(tmp_path: Path) -> None:
    out = tmp_path / "orders"
    args = ["orders", "--out", str(out), "--count", "5", "--seed", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    documents = load_dataset(out)
    assert [d.name for d in documents] == sorted(p.name for p in out.glob("*.pdf"))
    assert [d.name[:7] for d in documents] == [f"po-{i:04d}" for i in range(5)]
    workflow = {f.name for f in load_workflow_file(EXAMPLES / "purchase_order.yaml").fields}
    assert all(set(d.fields) <= workflow for d in documents)
