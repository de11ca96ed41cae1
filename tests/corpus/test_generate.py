"""The corpus generator: reproducible bytes and ground truth that matches the printed page."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image
from typer.testing import CliRunner

from docflow.corpus.cli import app
from docflow.corpus.generate import LAYOUTS, generate_corpus, make_document
from docflow.corpus.styles import format_figure

INVOICE_FIELDS = {"invoice_number", "invoice_date", "vendor_name", "subtotal", "tax", "total"}


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _text(pdf: bytes) -> str:
    document = pdfium.PdfDocument(pdf)
    try:
        return document[0].get_textpage().get_text_range()
    finally:
        document.close()


def test_same_seed_gives_the_same_bytes(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        generate_corpus(tmp_path / folder, count=8, seed=11, kinds=("pdf", "scan"), dpi=100)
    first, second = _digests(tmp_path / "a"), _digests(tmp_path / "b")
    assert len(first) == 8 * 3
    assert first == second


def test_another_seed_gives_other_documents(tmp_path: Path) -> None:
    assert make_document(1, 0).pdf != make_document(2, 0).pdf
    assert make_document(1, 0).truth != make_document(2, 0).truth


def test_a_document_does_not_depend_on_the_corpus_size() -> None:
    assert make_document(5, 3).pdf == make_document(5, 3).pdf


def test_every_layout_appears_in_seven_documents() -> None:
    layouts = {make_document(0, i).layout for i in range(len(LAYOUTS))}
    assert layouts == set(LAYOUTS)
    assert len(LAYOUTS) >= 6


@pytest.mark.parametrize("index", range(21))
def test_text_layer_prints_every_ground_truth_value(index: int) -> None:
    document = make_document(7, index)
    text = " ".join(_text(document.pdf).split())
    fields = document.truth["fields"]
    assert set(document.printed) == set(fields)
    for name, pieces in document.printed.items():
        for piece in pieces:
            assert piece in text, f"{document.name}: {name} printed as {piece!r} not in text layer"
    for row in document.truth.get("line_items", []):
        amount = Decimal(row["amount"])
        assert any(format_figure(amount, decimal_comma=c) in text for c in (False, True))
        # wrapped descriptions are split by the other cells of their first line
        assert all(word in text for word in row["description"].split())


@pytest.mark.parametrize("index", range(14))
def test_ground_truth_is_normalised_and_consistent(index: int) -> None:
    truth = make_document(3, index).truth
    fields = truth["fields"]
    for name in ("invoice_date", "due_date", "date"):
        if name in fields:
            date.fromisoformat(fields[name])
    for name in ("subtotal", "tax", "total"):
        if name in fields:
            assert Decimal(fields[name]).as_tuple().exponent == -2
    if "invoice_number" in fields:
        assert set(fields) >= INVOICE_FIELDS
        assert Decimal(fields["subtotal"]) + Decimal(fields["tax"]) == Decimal(fields["total"])
        rows = truth.get("line_items")
        if rows:
            assert sum(Decimal(r["amount"]) for r in rows) == Decimal(fields["subtotal"])
    else:
        assert set(fields) == {"company", "date", "address", "total"}


def test_address_reads_as_printed_when_lines_are_joined() -> None:
    document = make_document(0, 4)
    assert " ".join(document.printed["address"]) == document.truth["fields"]["address"]


def test_cli_writes_scans_at_the_requested_resolution(tmp_path: Path) -> None:
    out = tmp_path / "scans"
    args = ["generate", "--out", str(out), "--count", "2", "--seed", "4", "--kinds", "scan"]
    result = CliRunner().invoke(app, [*args, "--dpi", "200", "--degradation", "hard"])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "classic-0000.jpg",
        "classic-0000.json",
        "european-0001.jpg",
        "european-0001.json",
    ]
    with Image.open(out / "classic-0000.jpg") as image:
        assert image.info["dpi"][0] == pytest.approx(200)
        # A4 at 200 dpi, a little larger once rotated
        assert 1650 <= image.width <= 1760
    assert json.loads((out / "classic-0000.json").read_text())["fields"]["invoice_number"]


def test_cli_refuses_an_unknown_kind(tmp_path: Path) -> None:
    args = ["generate", "--out", str(tmp_path), "--count", "1", "--kinds", "fax"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert not list(tmp_path.iterdir())
