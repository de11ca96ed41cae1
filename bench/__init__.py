"""The benchmark suite: `python -m bench` runs the whole-system scenarios (see bench/__main__.py).

The older single-purpose scripts (`accuracy.py`, `ocr_throughput.py`, `ocr_preprocess_study.py`)
still run as scripts: `.venv/bin/python bench/ocr_throughput.py`.
"""
