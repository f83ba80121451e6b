"""The import graph points one way: cli -> engine -> diffusers -> delta, with the store beside
delta, both above the pure modules; the lore formats (text in, entries out) use only the pure
modules. Read from the source, so a new arrow fails here first."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "narrative"
PURE = {"narrative.model", "narrative.fields", "narrative.ids", "narrative.nodefile", "narrative.errors"}
SQL = re.compile(r"^\s*(SELECT|INSERT|DELETE\s+FROM|UPDATE\s+\w+\s+SET|CREATE\s+(TABLE|INDEX)|PRAGMA)\b")
# Modules kept for one release so that old imports work; they only re-export.
FORMER_HOMES = {"narrative/engine/read.py", "narrative/engine/pending.py", "narrative/world.py",
                "narrative/store/cache.py"}


@dataclass(frozen=True)
class Imported:
    module: str
    line: int
    typing_only: bool


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[Imported]:
    out: list[Imported] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.Import):
            out.extend(Imported(a.name, node.lineno, typing_only) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "narrative" and node.level == 0:
            out.extend(Imported(f"narrative.{a.name}", node.lineno, typing_only) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(Imported(node.module, node.lineno, typing_only))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only or (isinstance(node, ast.If) and _is_type_checking(node)))

    visit(tree, False)
    return out


def _sources() -> dict[str, ast.AST]:
    root = PACKAGE.parent
    return {p.relative_to(root).as_posix(): ast.parse(p.read_text("utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


SOURCES = _sources()


def _under(path: str, *folders: str) -> bool:
    return any(path.startswith(f"narrative/{f}/") for f in folders)


def _narr(module: str) -> bool:
    return module == "narrative" or module.startswith("narrative.")


def _pure(m: str) -> bool:
    return any(m == p or m.startswith(p + ".") for p in PURE)


ABOVE_STORE = ("narrative.delta", "narrative.diffusers", "narrative.engine", "narrative.cli",
               "narrative.api")

# rule -> whether the import ``imp`` made by the file at ``path`` breaks it
RULES: dict[str, Callable[[str, Imported], bool]] = {
    "pygit2 only in the store": lambda path, imp: (
        imp.module.split(".")[0] == "pygit2" and not _under(path, "store") and not imp.typing_only),
    "diffusers never import the engine or the cli": lambda path, imp: (
        _under(path, "diffusers")
        and imp.module.startswith(("narrative.engine", "narrative.cli", "narrative.api"))),
    "delta imports only the pure modules": lambda path, imp: (
        _under(path, "delta") and _narr(imp.module)
        and not imp.module.startswith("narrative.delta") and not _pure(imp.module)),
    "the store imports nothing above it": lambda path, imp: (
        _under(path, "store") and path not in FORMER_HOMES and imp.module.startswith(ABOVE_STORE)),
    "the engine never imports the cli": lambda path, imp: (
        _under(path, "engine") and imp.module.startswith(("narrative.cli", "narrative.api"))),
    "the lore formats import only the pure modules": lambda path, imp: (
        _under(path, "lore") and _narr(imp.module)
        and not imp.module.startswith("narrative.lore") and not _pure(imp.module)),
    "the pure modules import only each other": lambda path, imp: (
        path.removesuffix(".py").replace("/", ".") in PURE and _narr(imp.module)
        and not _pure(imp.module)),
}


def _violations(rule: str) -> list[str]:
    broken = RULES[rule]
    return [f"{path}:{imp.line} imports {imp.module}"
            for path, tree in SOURCES.items() for imp in _imports(tree) if broken(path, imp)]


@pytest.mark.parametrize("rule", sorted(RULES))
def test_imports_point_down(rule: str) -> None:
    assert _violations(rule) == []


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def test_sql_only_in_the_store() -> None:
    found = []
    for path, tree in SOURCES.items():
        if _under(path, "store"):
            continue
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docs and SQL.match(node.value)):
                found.append(f"{path}:{node.lineno}: {node.value[:40]!r}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("execute", "executemany", "executescript")):
                found.append(f"{path}:{node.lineno}: .{node.func.attr}(...)")
    assert found == []


def test_the_rules_see_a_violation() -> None:
    """The checks themselves work: a planted arrow of each kind is found."""
    planted = {
        "narrative/diffusers/x.py": "from narrative.engine.event import run_event\n",
        "narrative/delta/x.py": "import narrative.store.view\n",
        "narrative/engine/x.py": "import pygit2\n",
        "narrative/store/x.py": "from narrative.delta.draft import Draft\n",
        "narrative/lore/x.py": "from narrative.store.view import WorldView\n",
    }
    saved = dict(SOURCES)
    try:
        SOURCES.update({p: ast.parse(src) for p, src in planted.items()})
        assert _violations("diffusers never import the engine or the cli")
        assert _violations("delta imports only the pure modules")
        assert _violations("pygit2 only in the store")
        assert _violations("the store imports nothing above it")
        assert _violations("the lore formats import only the pure modules")
        SOURCES["narrative/engine/y.py"] = ast.parse(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pygit2\n")
        assert not any("engine/y.py" in v for v in _violations("pygit2 only in the store"))
        SOURCES["narrative/engine/z.py"] = ast.parse('def f(db):\n    db.execute("SELECT 1")\n')
        with pytest.raises(AssertionError):
            test_sql_only_in_the_store()
    finally:
        SOURCES.clear()
        SOURCES.update(saved)
