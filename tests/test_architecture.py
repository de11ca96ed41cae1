"""Architecture rules, checked on the syntax tree of every module under src/docflow.

1. SQL statements (`select`, `update`, `delete`, `insert` from SQLAlchemy, `session.query`) are
   built only in repository modules (and db.py / tenancy.py; migrations live outside src).
2. In repositories, a statement over tenant data starts from `TenantRepository.base()` /
   `scoped_update()` / `scoped_delete()`: a bare statement or `session.get` on a model with a
   `tenant_id`, or raw SQL text, is allowed only inside a function marked `@cross_tenant`; a
   repository class that touches tenant models derives from TenantRepository.
3. No `api.py` imports a repository module (handlers call services).
4. The extraction package imports nothing from docflow outside docflow.extraction (except the
   dependency-free docflow.errors).
5. Services know nothing of HTTP: no `HTTPException`, no fastapi/starlette import.
Each rule is also run on a small bad example, so a rule that cannot fail would be noticed.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from docflow.db import Base

SRC = Path(__file__).resolve().parents[1] / "src" / "docflow"
STATEMENTS = {"select", "update", "delete", "insert"}
SQL_EXEMPT = {"db.py", "tenancy.py"}


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        yield ".".join(p for p in parts if p != "__init__"), path


def is_repository(path: Path) -> bool:
    return path.name == "repository.py" or path.parent.name == "repositories"


def _sqlalchemy_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Local names bound to SQLAlchemy statement constructors, and aliases of the package."""
    names: set[str] = set()
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
            names |= {a.asname or a.name for a in node.names if a.name in STATEMENTS}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "sqlalchemy"}
    return names, aliases


def _builds_statement(func: ast.expr, names: set[str], aliases: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in names
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "query":  # session.query(...) / self.session.query(...)
        owner = func.value
        return (isinstance(owner, ast.Name) and owner.id == "session") or (
            isinstance(owner, ast.Attribute) and owner.attr == "session"
        )
    return func.attr in STATEMENTS and isinstance(func.value, ast.Name) and func.value.id in aliases


def statement_calls(tree: ast.AST) -> Iterator[ast.Call]:
    """Calls that build a SQL statement: select(...), sa.update(...), session.query(...)."""
    names, aliases = _sqlalchemy_names(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _builds_statement(node.func, names, aliases):
            yield node


def check_no_sql_outside_repositories(path: Path, tree: ast.AST) -> list[str]:
    if is_repository(path) or (path.name in SQL_EXEMPT and path.parent == SRC):
        return []
    return [f"{path.name}:{c.lineno} builds a SQL statement" for c in statement_calls(tree)]


def _root_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_cross_tenant(fn: ast.AST) -> bool:
    decorators = getattr(fn, "decorator_list", [])
    for dec in decorators:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Name) and target.id == "cross_tenant":
            return True
    return False


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node


def _raw_sql(call: ast.Call) -> bool:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if name not in ("text", "exec_driver_sql") or not call.args:
        return False
    arg = call.args[0]
    sql = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""
    return sql.lstrip().split(" ")[0].upper() in ("SELECT", "UPDATE", "DELETE", "INSERT", "WITH")


def check_tenant_filter(
    path: Path, tree: ast.AST, is_tenant_model: Callable[[str], bool]
) -> list[str]:
    if not is_repository(path):
        return []
    allowed: set[int] = set()
    for fn in _functions(tree):
        if _is_cross_tenant(fn):
            allowed |= {id(n) for n in ast.walk(fn)}
    problems = []
    for call in statement_calls(tree):
        if id(call) not in allowed and any(
            is_tenant_model(n) for a in call.args for n in _root_names(a)
        ):
            problems.append(f"{path.name}:{call.lineno} queries tenant data without base()")
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        if id(call) in allowed:
            continue
        func = call.func
        is_get = isinstance(func, ast.Attribute) and func.attr == "get" and call.args
        if is_get and any(is_tenant_model(n) for n in _root_names(call.args[0])):
            problems.append(f"{path.name}:{call.lineno} session.get on tenant data")
        if _raw_sql(call):
            problems.append(f"{path.name}:{call.lineno} raw SQL outside @cross_tenant")
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        bases = {b.id for b in cls.bases if isinstance(b, ast.Name)}
        touches = any(is_tenant_model(n) for n in _root_names(cls))
        if touches and "TenantRepository" not in bases:
            problems.append(f"{path.name}: {cls.name} touches tenant data, not a TenantRepository")
    return problems


def _imported_modules(tree: ast.AST, package: str) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module
            yield from (f"{module}.{a.name}" for a in node.names)


def check_api_imports_no_repository(path: Path, tree: ast.AST, package: str) -> list[str]:
    if path.name != "api.py":
        return []
    return [
        f"{path.name} imports {m}"
        for m in _imported_modules(tree, package)
        if m.endswith(".repository") or ".repository." in m or m == "repository"
    ]


# docflow.errors is the one exception: plain exception classes importing nothing from docflow,
# so the workflow-file loader can raise the same InvalidInput the API renders.
EXTRACTION_MAY_IMPORT = ("docflow.extraction", "docflow.errors")


def check_extraction_is_pure(path: Path, tree: ast.AST, package: str) -> list[str]:
    if not package.startswith("docflow.extraction"):
        return []
    return [
        f"{path.name} imports {m}"
        for m in _imported_modules(tree, package)
        if m.split(".")[0] == "docflow"
        and not any(m == ok or m.startswith(ok + ".") for ok in EXTRACTION_MAY_IMPORT)
    ]


def check_services_know_no_http(path: Path, tree: ast.AST, package: str) -> list[str]:
    if path.name != "service.py":
        return []
    problems = [
        f"{path.name}:{n.lineno} HTTPException"
        for n in ast.walk(tree)
        if (isinstance(n, ast.Name) and n.id == "HTTPException")
        or (isinstance(n, ast.Attribute) and n.attr == "HTTPException")
    ]
    problems += [
        f"{path.name} imports {m}"
        for m in _imported_modules(tree, package)
        if m.split(".")[0] in ("fastapi", "starlette")
    ]
    return problems


def _tenant_model_resolver(module: Any) -> Callable[[str], bool]:
    def is_tenant_model(name: str) -> bool:
        value = getattr(module, name, None)
        return (
            isinstance(value, type)
            and issubclass(value, Base)
            and value is not Base
            and "tenant_id" in value.__table__.c
        )

    return is_tenant_model


def violations() -> list[str]:
    found: list[str] = []
    for name, path in modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found += check_no_sql_outside_repositories(path, tree)
        found += check_api_imports_no_repository(path, tree, package)
        found += check_extraction_is_pure(path, tree, package)
        found += check_services_know_no_http(path, tree, package)
        if is_repository(path):
            resolver = _tenant_model_resolver(importlib.import_module(name))
            found += check_tenant_filter(path, tree, resolver)
    return found


def test_the_architecture_rules_hold() -> None:
    assert violations() == []


def test_the_repositories_are_scanned() -> None:
    repositories = [p for _, p in modules() if is_repository(p)]
    assert len(repositories) >= 6


def _tree(source: str) -> ast.AST:
    return ast.parse(source)


BAD_SQL = "from sqlalchemy import select\n\ndef f(s):\n    return s.scalars(select(X))\n"
BAD_TENANT_REPO = """
from sqlalchemy import select, text
from docflow.tenancy import TenantRepository, cross_tenant

class Loose:
    def all(self):
        return self.session.scalars(select(Project))

class Scoped(TenantRepository):
    def one(self, pk):
        return self.session.get(Project, pk)

    def raw(self):
        return self.session.execute(text("SELECT * FROM projects"))

@cross_tenant("allowed on purpose")
def lookup(session):
    return session.execute(select(Project.tenant_id)).all()
"""


def test_each_rule_catches_a_bad_example() -> None:
    service = Path("src/docflow/projects/service.py")
    repository = Path("src/docflow/projects/repository.py")
    api = Path("src/docflow/projects/api.py")
    assert check_no_sql_outside_repositories(service, _tree(BAD_SQL))
    assert not check_no_sql_outside_repositories(repository, _tree(BAD_SQL))
    problems = check_tenant_filter(repository, _tree(BAD_TENANT_REPO), lambda n: n == "Project")
    assert len(problems) == 4, problems  # Loose select, Loose class, session.get, raw text
    assert check_api_imports_no_repository(
        api, _tree("from docflow.projects.repository import ProjectRepository"), "docflow.projects"
    )
    assert check_api_imports_no_repository(
        api, _tree("from . import repository"), "docflow.projects"
    )
    ocr = Path("src/docflow/extraction/ocr/base.py")
    assert check_extraction_is_pure(
        ocr, _tree("from docflow.db import Base"), "docflow.extraction.ocr"
    )
    assert check_extraction_is_pure(
        ocr, _tree("from ...tenancy import X"), "docflow.extraction.ocr"
    )
    assert not check_extraction_is_pure(
        ocr, _tree("from ..model import Page"), "docflow.extraction.ocr"
    )
    assert check_services_know_no_http(
        service, _tree("from fastapi import HTTPException\nraise HTTPException(404)"), "docflow.x"
    )


@pytest.mark.parametrize("rule", ["select", "query"])
def test_statement_detection_sees_aliases_and_query(rule: str) -> None:
    source = {
        "select": "import sqlalchemy as sa\nsa.select(X)\n",
        "query": "def f(session):\n    return session.query(X).all()\n",
    }[rule]
    assert len(list(statement_calls(_tree(source)))) == 1
