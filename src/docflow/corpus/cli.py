"""`docflow corpus generate`: write a labelled corpus of generated invoices and receipts."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from docflow.corpus.generate import KINDS, generate_corpus
from docflow.corpus.orders import generate_orders
from docflow.corpus.scan import LEVELS

app = typer.Typer(add_completion=False, help="Generated labelled documents for evaluation.")


@app.callback()
def corpus() -> None:
    """Generated labelled documents for evaluation."""


@app.command("generate")
def generate(
    out: Path = typer.Option(..., "--out", help="folder to write documents and labels into"),
    count: int = typer.Option(..., "--count", min=1, help="number of documents"),
    seed: int = typer.Option(0, "--seed", help="same seed, same bytes"),
    kinds: str = typer.Option("pdf,scan", "--kinds", help="comma-separated: pdf, scan"),
    dpi: int = typer.Option(300, "--dpi", min=72, max=600, help="scan resolution"),
    degradation: str = typer.Option("mild", "--degradation", help="mild, medium or hard"),
) -> None:
    """Generate COUNT documents (7 invoice and receipt layouts in turn) with ground truth."""
    chosen = [k.strip() for k in kinds.split(",") if k.strip()]
    if not chosen or any(k not in KINDS for k in chosen):
        raise typer.BadParameter(f"choose among {', '.join(KINDS)}", param_hint="--kinds")
    if degradation not in LEVELS:
        raise typer.BadParameter(f"choose among {', '.join(LEVELS)}", param_hint="--degradation")
    documents = generate_corpus(
        out, count=count, seed=seed, kinds=chosen, dpi=dpi, degradation=degradation
    )
    Console().print(f"wrote {len(documents)} labelled documents to {out}")


@app.command("orders")
def orders(
    out: Path = typer.Option(..., "--out", help="folder to write documents and labels into"),
    count: int = typer.Option(..., "--count", min=1, help="number of purchase orders"),
    seed: int = typer.Option(0, "--seed", help="same seed, same bytes"),
    kinds: str = typer.Option("pdf", "--kinds", help="comma-separated: pdf, scan"),
) -> None:
    """Generate COUNT labelled purchase orders (text PDFs by default) from a few recurring
    buyers, each printing its own layout; evaluate them with examples/purchase_order.yaml."""
    chosen = [k.strip() for k in kinds.split(",") if k.strip()]
    if not chosen or any(k not in KINDS for k in chosen):
        raise typer.BadParameter(f"choose among {', '.join(KINDS)}", param_hint="--kinds")
    written = generate_orders(out, count=count, seed=seed, kinds=chosen)
    Console().print(f"wrote {len(written)} labelled purchase orders to {out}")
