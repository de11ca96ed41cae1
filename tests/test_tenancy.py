"""`TenantId` is made only by the named factories in `docflow.tenancy`.

The type makes a raw string where a verified tenant is needed a type error (mypy); this test
keeps the way around it, calling `TenantId(...)` directly, out of every other module.
"""

from __future__ import annotations

import ast
from pathlib import Path

from docflow.tenancy import TenantContext, from_credential

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


def test_write_scope_implies_review_and_nothing_else() -> None:
    writer = TenantContext(tenant_id=from_credential("ten_a"), key_id="key_1", scopes=("write",))
    reader = TenantContext(tenant_id=from_credential("ten_a"), key_id="key_2", scopes=("read",))
    assert writer.has_scope("review") and writer.has_scope("write")
    assert not writer.has_scope("admin") and not writer.has_scope("read")
    assert not reader.has_scope("review")


def test_actions_are_attributed_to_the_user_then_the_key_then_the_operator() -> None:
    tenant = from_credential("ten_a")
    assert TenantContext(tenant_id=tenant, key_id="key_1", user_id="usr_1").actor == "usr_1"
    assert TenantContext(tenant_id=tenant, key_id="key_1").actor == "key_1"
    assert TenantContext(tenant_id=tenant).actor == "operator"
