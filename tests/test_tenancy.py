"""`TenantId` is made only by the named factories in `docflow.tenancy`.

The type makes a raw string where a verified tenant is needed a type error (mypy); this test
keeps the way around it, calling `TenantId(...)` directly, out of every other module.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "docflow"


def tenant_id_constructions(source: str) -> list[int]:
    """Lines of `source` that call `TenantId(...)` (or `tenancy.TenantId(...)`)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name == "TenantId":
            lines.append(node.lineno)
    return sorted(lines)


def test_only_tenancy_constructs_a_tenant_id() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "tenancy.py"
        for line in tenant_id_constructions(path.read_text())
    ]
    assert offenders == []


def test_the_rule_finds_a_direct_construction() -> None:
    bad = (
        "from docflow import tenancy\n"
        "from docflow.tenancy import TenantContext, TenantId\n"
        "a = TenantContext(tenant_id=TenantId(raw))\n"
        "b = tenancy.TenantId(raw)\n"
        "c = TenantContext(tenant_id=tenancy.operator(raw))\n"
    )
    assert tenant_id_constructions(bad) == [3, 4]
