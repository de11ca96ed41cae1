"""Which OCR preprocessing steps help on real receipts? A measurement, not a test.

For every receipt in a labelled folder (default: the SROIE dev set), OCR the image once per
variant of preprocessing and count how often the labelled `company`, `date` and `total` appear
in the OCR text (case- and whitespace-insensitive; the date in any common written form). Also
reports OCR seconds per receipt, relative to the plain pass.

    .venv/bin/python bench/ocr_preprocess_study.py --dataset DIR [--variants a,b] [--limit N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import structlog
from PIL import Image, ImageOps

from docflow.extraction.ocr import TesserocrEngine
from docflow.extraction.preprocess import PreprocessOptions, prepare

PLAIN = PreprocessOptions.none()
# Upscaling only (bicubic, as first studied); the rest is added per variant.
UP = replace(PLAIN, upscale=True, interpolation="cubic")
LINEAR = replace(UP, target_text_height=26, interpolation="linear")
VARIANTS: dict[str, tuple[PreprocessOptions, int]] = {
    "plain": (PLAIN, 3),
    "up20": (replace(UP, target_text_height=20), 3),
    "up26": (replace(UP, target_text_height=26), 3),
    "up32": (UP, 3),
    "up26+bg": (replace(UP, target_text_height=26, normalise_background="always"), 3),
    "up26+bg+otsu": (
        replace(UP, target_text_height=26, normalise_background="always", binarise="otsu"),
        3,
    ),
    "up26+bg+adaptive": (
        replace(UP, target_text_height=26, normalise_background="always", binarise="adaptive"),
        3,
    ),
    "up26+bg+deskew": (
        replace(UP, target_text_height=26, normalise_background="always", deskew=True),
        3,
    ),
    "up26+deskew": (replace(UP, target_text_height=26, deskew=True), 3),
    "up26+otsu": (replace(UP, target_text_height=26, binarise="otsu"), 3),
    "up26-psm4": (replace(UP, target_text_height=26), 4),
    "up26-psm6": (replace(UP, target_text_height=26), 6),
    "up26+deskew-psm6": (replace(UP, target_text_height=26, deskew=True), 6),
    "up26-linear-psm6": (LINEAR, 6),
    "up26-linear+crop-psm6": (replace(LINEAR, crop=True), 6),
    "up26-linear+crop-from15-psm6": (replace(LINEAR, crop=True, large_text_height=15), 6),
    "bg": (replace(PLAIN, normalise_background="always"), 3),
    "up26+deskew+uneven": (
        replace(UP, target_text_height=26, normalise_background="uneven", deskew=True),
        3,
    ),
    "deskew": (replace(PLAIN, deskew=True), 3),
    "plain-psm4": (PLAIN, 4),
    "plain-psm6": (PLAIN, 6),
    "up26+bg-psm4": (replace(UP, target_text_height=26, normalise_background="always"), 4),
    "up26+bg-psm6": (replace(UP, target_text_height=26, normalise_background="always"), 6),
}
FIELDS = ("company", "date", "total")
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().upper()


def date_forms(iso: str) -> list[str]:
    day = dt.date.fromisoformat(iso)
    d, m, y = f"{day.day:02d}", f"{day.month:02d}", str(day.year)
    forms = []
    for sep in "/-.":
        for dd, mm in ((d, m), (str(day.day), str(day.month))):
            forms += [f"{dd}{sep}{mm}{sep}{y}", f"{dd}{sep}{mm}{sep}{y[2:]}"]
        forms.append(f"{y}{sep}{m}{sep}{d}")
    month = MONTHS[day.month - 1]
    forms += [f"{d} {month} {y}", f"{d}{month}{y}", f"{d}-{month}-{y}", f"{d} {month} {y[2:]}"]
    forms += [f"{d}-{month}-{y[2:]}", f"{d}/{month}/{y}"]
    return forms


def found(field: str, label: str, text: str) -> bool:
    squashed = squash(text)
    compact = squashed.replace(" ", "")
    if field == "date":
        return any(form.replace(" ", "") in compact for form in date_forms(label))
    if field == "total":
        return re.search(rf"(?<![\d.]){re.escape(label)}(?!\d)", compact) is not None
    return squash(label).replace(" ", "") in compact


def ocr_text(engine: TesserocrEngine, path: Path, options: PreprocessOptions) -> tuple[str, float]:
    image = ImageOps.exif_transpose(Image.open(path))
    started = time.perf_counter()
    prepared = prepare(image, options)
    words = engine.recognize(prepared.image, timeout_s=120)
    elapsed = time.perf_counter() - started
    lines: dict[int, list[str]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word.text)
    return "\n".join(" ".join(w) for w in lines.values()), elapsed


def study(
    dataset: Path, names: list[str], limit: int, threads: int, dump: Path | None = None
) -> dict[str, dict]:
    receipts = sorted(dataset.glob("*.jpg"))[:limit]
    labels = {p: json.loads(p.with_suffix(".json").read_text())["fields"] for p in receipts}
    engines = {psm: TesserocrEngine(psm=psm) for psm in {VARIANTS[n][1] for n in names}}
    report: dict[str, dict] = {}
    for name in names:
        options, psm = VARIANTS[name]

        def one(
            path: Path, options: PreprocessOptions = options, psm: int = psm, name: str = name
        ) -> tuple:
            text, seconds = ocr_text(engines[psm], path, options)
            if dump:
                (dump / f"{path.stem}.{name}.txt").write_text(text)
            label = labels[path]
            hits = {f: found(f, label[f], text) for f in FIELDS if label.get(f)}
            return hits, seconds

        started = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(one, receipts))
        wall = time.perf_counter() - started
        fields = {}
        for f in FIELDS:
            scored = [r[0][f] for r in results if f in r[0]]
            fields[f] = sum(scored) / len(scored)
        seconds = sum(r[1] for r in results) / len(results)
        report[name] = {"fields": fields, "seconds_per_receipt": seconds, "wall_s": wall}
        print(
            f"{name:20s} company {fields['company']:.2f} date {fields['date']:.2f} "
            f"total {fields['total']:.2f} mean {sum(fields.values()) / 3:.3f} "
            f"{seconds:.2f} s/receipt",
            flush=True,
        )
    return report


def main() -> None:
    # Per-document log lines would be measured along with the reading.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--dump", type=Path, help="folder for the OCR text of every receipt")
    args = parser.parse_args()
    names = args.variants.split(",")
    report = study(args.dataset, names, args.limit, args.threads, args.dump)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
