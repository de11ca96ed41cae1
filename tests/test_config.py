"""Settings: every one is documented in docs/operations.md."""

from __future__ import annotations

import re
from pathlib import Path

from docflow.config import Settings

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"


def _documented_settings() -> set[str]:
    """The names in the first column of the settings table (`HOST`, `PORT` rows name two)."""
    text = OPERATIONS.read_text()
    table = text[text.index("## Settings") :].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_setting_is_in_the_operations_settings_table() -> None:
    fields = {name.upper() for name in Settings.model_fields}
    documented = _documented_settings()
    assert fields - documented == set(), "add these to the table in docs/operations.md"
    assert documented - fields == set(), "the table in docs/operations.md names unknown settings"
