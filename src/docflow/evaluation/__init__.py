"""Measuring extraction accuracy on labelled documents (`docflow eval`).

`dataset` loads documents with their `<name>.json` labels, `compare` normalises and compares
values by field type, `runner` drives the engine over a dataset in parallel, `scoring` turns the
comparisons into per-field figures and `report` renders them as a table and as JSON.
"""
