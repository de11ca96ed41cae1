"""Architecture rules, checked on the syntax tree of every module under src/docflow.

1. SQL lives in repositories (and the database plumbing: db.py, tenancy.py, system_db.py):
   no SQLAlchemy statement (`select`, `update`, `delete`, `insert`, `session.query`), no raw SQL
   text, no `session.get`, `session.execute` or `session.scalar(s)` anywhere else.
2. In repositories, a statement over tenant data starts from `TenantRepository.base()` /
   `scoped_update()` / `scoped_delete()`: a bare statement or `session.get` on a model with a
   `tenant_id`, or raw SQL text, is allowed only inside a function marked `@cross_tenant`; a
   repository class that touches tenant models derives from TenantRepository.
3. The HTTP edge (routers: `api.py` and `*_api.py`; the `http` package; the composition roots
   that build or serve the app) is the only place that imports fastapi or starlette or raises
   `HTTPException`, and nothing below the edge imports an edge module.
4. No router imports a repository (handlers call services).
5. The extraction package imports nothing from docflow outside docflow.extraction (except the
   dependency-free docflow.errors).
6. The runtime's context (`docflow.runtime.context`: the services a step needs) and launcher
   (`docflow.runtime.launch`) are imported only by flows, steps, the runtime itself and the
   composition roots (any module may name a queue: `*_QUEUE`); the runtime imports no domain
   package (so no flow).
7. The import graph has no cycle, but for the models' registration in db.py (db imports every
   models module so the metadata is complete; every models module imports db's Base).
8. The language-model vendors' client libraries (`openai`, `anthropic`) are imported only by
   `docflow.llm.clients`, and boto3 in the llm package only there too: every other module of
   `docflow.llm` (context, prompt, grounding, gap-fill, ledger) reaches a provider through
   the `Provider` protocol, so no other module can send a document's text anywhere.
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
# The database plumbing: engines, sessions, tenant binding, the DBOS system schema, and the
# keyset pagination that runs a repository's statement a page at a time.
SQL_EXEMPT = {"docflow.db", "docflow.tenancy", "docflow.system_db", "docflow.kit.pagination"}
SESSION_QUERIES = {"get", "execute", "scalar", "scalars", "query"}
SESSION_NAMES = {"session", "connection", "conn"}
HTTP_PACKAGES = ("fastapi", "starlette")
# The composition roots that build or serve the HTTP app.
HTTP_ROOTS = {"docflow.main", "docflow.processes"}
COMPOSITION_ROOTS = {
    "docflow.main",
    "docflow.processes",
    "docflow.worker",
    "docflow.cli",
    "docflow.cli_operator",
    "docflow.cli_commands",
    "docflow.bootstrap",
}
RUNTIME = "docflow.runtime"
RUNTIME_CONTEXT = "docflow.runtime.context"
RUNTIME_LAUNCH = "docflow.runtime.launch"
# Packages of the domain, which the runtime must not import.
DOMAINS = (
    "batches",
    "documents",
    "events",
    "executors",
    "history",
    "idempotency",
    "llm",
    "projects",
    "reconciler",
    "tenants",
    "webhooks",
    "workflows",
)


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        yield module_name(path), path


def module_name(path: Path) -> str:
    """`src/docflow/a/b.py` -> `docflow.a.b` (the path may be relative, as in the examples)."""
    parts = path.with_suffix("").parts
    parts = parts[parts.index("docflow") :]
    return ".".join(p for p in parts if p != "__init__")


def package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def is_repository(path: Path) -> bool:
    return path.name == "repository.py" or path.parent.name == "repositories"


def is_http_edge(name: str) -> bool:
    leaf = name.rpartition(".")[2]
    return (
        leaf == "api"
        or leaf.endswith("_api")
        or name == "docflow.http"
        or name.startswith("docflow.http.")
        or name in HTTP_ROOTS
    )


def is_composition_root(name: str) -> bool:
    """The processes' entry points and the command-line modules (`*/cli.py`) they mount."""
    return name in COMPOSITION_ROOTS or name.rpartition(".")[2] == "cli"


def is_durable(name: str) -> bool:
    """Flows and steps: the modules that run inside DBOS and may reach the runtime context."""
    return name.rpartition(".")[2] in ("flows", "steps")


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


def _on_session(func: ast.Attribute) -> bool:
    """`session.x`, `self.session.x`, `connection.x`: a call on a database session."""
    owner = func.value
    return (isinstance(owner, ast.Name) and owner.id in SESSION_NAMES) or (
        isinstance(owner, ast.Attribute) and owner.attr in SESSION_NAMES
    )


def _builds_statement(func: ast.expr, names: set[str], aliases: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in names
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "query":  # session.query(...) / self.session.query(...)
        return _on_session(func)
    return func.attr in STATEMENTS and isinstance(func.value, ast.Name) and func.value.id in aliases


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    return (n for n in ast.walk(tree) if isinstance(n, ast.Call))


def statement_calls(tree: ast.AST) -> Iterator[ast.Call]:
    """Calls that build a SQL statement: select(...), sa.update(...), session.query(...)."""
    names, aliases = _sqlalchemy_names(tree)
    return (c for c in _calls(tree) if _builds_statement(c.func, names, aliases))


def _raw_sql(call: ast.Call) -> bool:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if name not in ("text", "exec_driver_sql") or not call.args:
        return False
    arg = call.args[0]
    sql = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""
    words = sql.split()
    return bool(words) and words[0].upper() in (
        "SELECT",
        "UPDATE",
        "DELETE",
        "INSERT",
        "WITH",
        "SET",
        "CREATE",
        "DROP",
        "ALTER",
        "GRANT",
    )


def _session_query(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in SESSION_QUERIES
        and _on_session(func)
        and bool(call.args)
    )


def check_no_sql_outside_repositories(path: Path, tree: ast.AST) -> list[str]:
    if is_repository(path) or module_name(path) in SQL_EXEMPT:
        return []
    name = module_name(path)
    problems = [f"{name}:{c.lineno} builds a SQL statement" for c in statement_calls(tree)]
    for call in _calls(tree):
        attr = getattr(call.func, "attr", "")
        if _raw_sql(call):
            problems.append(f"{name}:{call.lineno} raw SQL outside a repository")
        elif _session_query(call) and attr != "query":
            problems.append(f"{name}:{call.lineno} session.{attr} outside a repository")
    return problems


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
    for call in _calls(tree):
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
    """Every module an import statement names, at any depth (imports inside functions count):
    `from a.b import c` yields `a.b` and `a.b.c`."""
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


def _is_repository_module(module: str) -> bool:
    return module.endswith(".repository") or ".repository." in module or module == "repository"


def check_routers_import_no_repository(name: str, tree: ast.AST, package: str) -> list[str]:
    if not is_http_edge(name) or name in HTTP_ROOTS:
        return []
    return [
        f"{name} imports {m}" for m in _imported_modules(tree, package) if _is_repository_module(m)
    ]


def check_http_stays_at_the_edge(name: str, tree: ast.AST, package: str) -> list[str]:
    if is_http_edge(name):
        return []
    problems = [
        f"{name}:{n.lineno} HTTPException"
        for n in ast.walk(tree)
        if (isinstance(n, ast.Name) and n.id == "HTTPException")
        or (isinstance(n, ast.Attribute) and n.attr == "HTTPException")
    ]
    for module in set(_imported_modules(tree, package)):
        if module.split(".")[0] in HTTP_PACKAGES:
            problems.append(f"{name} imports {module}")
        elif is_http_edge(module) and module != "docflow.http" and not is_composition_root(name):
            problems.append(f"{name} imports the HTTP edge module {module}")
    return sorted(problems)


# docflow.errors is the one exception: plain exception classes importing nothing from docflow,
# so the workflow-file loader can raise the same InvalidInput the API renders.
EXTRACTION_MAY_IMPORT = ("docflow.extraction", "docflow.errors")


LLM_LIBRARIES = ("openai", "anthropic")
LLM_CLIENTS = "docflow.llm.clients"


def check_llm_vendors_in_clients(name: str, tree: ast.AST, package: str) -> list[str]:
    if name == LLM_CLIENTS:
        return []
    in_llm = name == "docflow.llm" or name.startswith("docflow.llm.")
    return [
        f"{name} imports {m}"
        for m in set(_imported_modules(tree, package))
        if m.split(".")[0] in LLM_LIBRARIES or (in_llm and m.split(".")[0] in ("boto3", "botocore"))
    ]


# Files are sealed per tenant when encryption is on: the composition roots open storage through
# `encryption.service.open_file_storage`, never the raw `open_storage` (only a backup copies the
# raw bytes, as they are stored).
RAW_STORAGE = "docflow.storage.open"
RAW_STORAGE_USERS = ("docflow.storage", "docflow.encryption.service", "docflow.backup")


def check_storage_opened_sealed(name: str, tree: ast.AST, package: str) -> list[str]:
    if any(name == ok or name.startswith(ok + ".") for ok in RAW_STORAGE_USERS):
        return []
    return [
        f"{name} imports {m} (open storage with encryption.service.open_file_storage)"
        for m in set(_imported_modules(tree, package))
        if m == RAW_STORAGE or m.startswith(RAW_STORAGE + ".")
    ]


def check_extraction_is_pure(name: str, tree: ast.AST, package: str) -> list[str]:
    if not package.startswith("docflow.extraction"):
        return []
    return [
        f"{name} imports {m}"
        for m in _imported_modules(tree, package)
        if m.split(".")[0] == "docflow"
        and not any(m == ok or m.startswith(ok + ".") for ok in EXTRACTION_MAY_IMPORT)
    ]


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _imported_names(tree: ast.AST, package: str) -> Iterator[tuple[str, str | None]]:
    """(module, name) for every `from module import name`, (module, None) for `import module`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = next(_imported_modules(ast.Module([node], []), package))
            yield from ((module, a.name) for a in node.names)


def _reaches_the_runtime(module: str, name: str | None) -> bool:
    """Whether importing `name` from `module` reaches the runtime's context or launcher; a queue
    name (`*_QUEUE`, a constant any module that enqueues may use) does not."""
    if _within(module, RUNTIME_LAUNCH) or (module == RUNTIME and name == "launch"):
        return True
    if module == RUNTIME and name == "context":
        return True
    if _within(module, RUNTIME_CONTEXT):
        return name is None or not name.endswith("_QUEUE")
    return False


def check_runtime_context_users(name: str, tree: ast.AST, package: str) -> list[str]:
    imported = list(_imported_names(tree, package))
    if _within(name, RUNTIME):
        return sorted(
            f"{name} (the runtime) imports {module}"
            for module, _ in imported
            if any(_within(module, f"docflow.{domain}") for domain in DOMAINS)
        )
    if is_durable(name) or is_composition_root(name):
        return []
    return sorted(
        f"{name} imports {module}.{what}"
        for module, what in imported
        if _reaches_the_runtime(module, what)
    )


def import_graph() -> dict[str, set[str]]:
    """Module -> the docflow modules it imports (at any depth, so lazy imports count)."""
    known = dict(modules())
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = {m for m in _imported_modules(tree, package_of(name, path)) if m in known}
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def is_models_registration(component: set[str]) -> bool:
    """db.py imports every models module so the metadata is complete; they import db's Base."""
    return "docflow.db" in component and all(
        m == "docflow.db" or m.endswith(".models") for m in component
    )


def check_no_cycles(graph: dict[str, set[str]]) -> list[str]:
    return [
        "import cycle: " + " ".join(sorted(c))
        for c in cycles(graph)
        if not is_models_registration(c)
    ]


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
        package = package_of(name, path)
        found += check_no_sql_outside_repositories(path, tree)
        found += check_routers_import_no_repository(name, tree, package)
        found += check_http_stays_at_the_edge(name, tree, package)
        found += check_extraction_is_pure(name, tree, package)
        found += check_llm_vendors_in_clients(name, tree, package)
        found += check_storage_opened_sealed(name, tree, package)
        found += check_runtime_context_users(name, tree, package)
        if is_repository(path):
            resolver = _tenant_model_resolver(importlib.import_module(name))
            found += check_tenant_filter(path, tree, resolver)
    return found + check_no_cycles(import_graph())


def test_the_architecture_rules_hold() -> None:
    assert violations() == []


def test_the_repositories_and_edges_are_scanned() -> None:
    names = [name for name, _ in modules()]
    assert len([p for _, p in modules() if is_repository(p)]) >= 6
    assert len([n for n in names if is_http_edge(n)]) >= 10
    assert len([n for n in names if is_durable(n)]) >= 5
    assert len(import_graph()["docflow.db"]) >= 5  # the models' registration is seen


def _tree(source: str) -> ast.AST:
    return ast.parse(source)


# The four violations an earlier version of these rules let through.
def test_a_router_not_named_api_py_importing_a_repository_is_caught() -> None:
    source = "from docflow.documents.repository import DocumentRepository\n"
    assert check_routers_import_no_repository(
        "docflow.documents.upload_api", _tree(source), "docflow.documents"
    )
    assert not check_routers_import_no_repository(
        "docflow.documents.service", _tree(source), "docflow.documents"
    )


def test_raw_sql_outside_a_repository_is_caught() -> None:
    source = 'from sqlalchemy import text\n\ndef f(session):\n    session.execute(text("SELECT 1"))'
    problems = check_no_sql_outside_repositories(Path("src/docflow/reconciler.py"), _tree(source))
    assert len(problems) == 2, problems  # the text and the execute
    assert not check_no_sql_outside_repositories(
        Path("src/docflow/batches/repository.py"), _tree(source)
    )


def test_session_get_outside_a_repository_is_caught() -> None:
    source = "def f(self):\n    return self.session.get(Document, 'd')\n"
    assert check_no_sql_outside_repositories(Path("src/docflow/documents/steps.py"), _tree(source))
    harmless = "def f(headers):\n    return headers.get('x')\n"
    assert not check_no_sql_outside_repositories(
        Path("src/docflow/documents/steps.py"), _tree(harmless)
    )


def test_fastapi_in_a_step_module_is_caught() -> None:
    source = "from fastapi import UploadFile\n"
    assert check_http_stays_at_the_edge("docflow.documents.steps", _tree(source), "x")
    assert check_http_stays_at_the_edge(
        "docflow.reconciler", _tree("from docflow.http.health import X\n"), "docflow"
    )
    assert not check_http_stays_at_the_edge("docflow.documents.api", _tree(source), "x")
    assert not check_http_stays_at_the_edge("docflow.http.deps", _tree(source), "x")


def test_the_runtime_context_is_reached_only_by_flows_steps_and_roots() -> None:
    source = "from docflow.runtime.context import services\n"
    assert check_runtime_context_users("docflow.batches.service", _tree(source), "x")
    assert check_runtime_context_users("docflow.batches.api", _tree(source), "x")
    assert not check_runtime_context_users("docflow.batches.flows", _tree(source), "x")
    assert not check_runtime_context_users("docflow.documents.steps", _tree(source), "x")
    assert not check_runtime_context_users("docflow.worker", _tree(source), "x")
    for source in (
        "from docflow.runtime import context\n",
        "from docflow.runtime.launch import open_client\n",
        "import docflow.runtime.context\n",
    ):
        assert check_runtime_context_users("docflow.events.outbox", _tree(source), "x"), source
    queue = "from docflow.runtime.context import BATCHES_QUEUE\n"
    assert not check_runtime_context_users("docflow.batches.triggers", _tree(queue), "x")
    flows = "from docflow.batches.flows import batch_flow\n"
    assert check_runtime_context_users("docflow.runtime.launch", _tree(flows), "docflow.runtime")


def test_an_import_cycle_is_caught_but_the_models_registration_is_not() -> None:
    graph = {
        "docflow.a": {"docflow.b"},
        "docflow.b": {"docflow.c"},
        "docflow.c": {"docflow.a"},
        "docflow.db": {"docflow.x.models"},
        "docflow.x.models": {"docflow.db"},
        "docflow.leaf": set(),
    }
    assert check_no_cycles(graph) == ["import cycle: docflow.a docflow.b docflow.c"]
    graph["docflow.x.models"].add("docflow.x.service")
    graph["docflow.x.service"] = {"docflow.db"}
    assert len(check_no_cycles(graph)) == 2


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
    assert check_no_sql_outside_repositories(service, _tree(BAD_SQL))
    assert not check_no_sql_outside_repositories(repository, _tree(BAD_SQL))
    problems = check_tenant_filter(repository, _tree(BAD_TENANT_REPO), lambda n: n == "Project")
    assert len(problems) == 4, problems  # Loose select, Loose class, session.get, raw text
    api = "docflow.projects.api"
    assert check_routers_import_no_repository(
        api, _tree("from docflow.projects.repository import ProjectRepository"), "docflow.projects"
    )
    assert check_routers_import_no_repository(
        api, _tree("from . import repository"), "docflow.projects"
    )
    ocr = "docflow.extraction.ocr.base"
    assert check_extraction_is_pure(
        ocr, _tree("from docflow.db import Base"), "docflow.extraction.ocr"
    )
    assert check_extraction_is_pure(
        ocr, _tree("from ...tenancy import X"), "docflow.extraction.ocr"
    )
    assert not check_extraction_is_pure(
        ocr, _tree("from ..model import Page"), "docflow.extraction.ocr"
    )
    assert check_http_stays_at_the_edge(
        "docflow.projects.service",
        _tree("from fastapi import HTTPException\nraise HTTPException(404)"),
        "docflow.projects",
    )
    for source in ("import openai", "from anthropic import Anthropic"):
        assert check_llm_vendors_in_clients("docflow.documents.steps", _tree(source), "x")
    assert check_llm_vendors_in_clients("docflow.llm.gapfill", _tree("import boto3"), "docflow.llm")
    assert not check_llm_vendors_in_clients("docflow.storage.s3", _tree("import boto3"), "x")
    assert not check_llm_vendors_in_clients(LLM_CLIENTS, _tree("import openai"), "docflow.llm")
    raw = "from docflow.storage.open import open_storage"
    assert check_storage_opened_sealed("docflow.runtime.launch", _tree(raw), "docflow.runtime")
    assert check_storage_opened_sealed(
        "docflow.cli", _tree("from docflow.storage import open"), "x"
    )
    assert not check_storage_opened_sealed("docflow.backup.cli", _tree(raw), "docflow.backup")


@pytest.mark.parametrize("rule", ["select", "query"])
def test_statement_detection_sees_aliases_and_query(rule: str) -> None:
    source = {
        "select": "import sqlalchemy as sa\nsa.select(X)\n",
        "query": "def f(session):\n    return session.query(X).all()\n",
    }[rule]
    assert len(list(statement_calls(_tree(source)))) == 1
