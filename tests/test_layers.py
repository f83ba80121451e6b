"""The import graph points one way: cli -> engine -> diffusers -> delta, with the store beside
delta, both above the pure modules; the lore formats (text in, entries out) use only the pure
modules. Read from the source, so a new arrow fails here first.

Imports are not the whole of a layer: code can reach through one (``wr.repo``), name git's
types in an annotation, or write a file itself. The use rules below read those too: outside
``store/`` nothing touches the repository handle, names pygit2, or writes a file, but for
the few modules named in :data:`MAY_WRITE` with the files they own."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "narrative"
PURE = {"narrative.model", "narrative.fields", "narrative.ids", "narrative.nodefile", "narrative.errors",
        "narrative.safejson"}
SQL = re.compile(r"^\s*(SELECT|INSERT|DELETE\s+FROM|UPDATE\s+\w+\s+SET|CREATE\s+(TABLE|INDEX)|PRAGMA)\b")


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


def _within(module: str, packages: tuple[str, ...]) -> bool:
    """``module`` is one of ``packages`` or inside one (``narrative.client`` is not in
    ``narrative.cli``)."""
    return any(module == p or module.startswith(p + ".") for p in packages)


ABOVE_STORE = ("narrative.delta", "narrative.diffusers", "narrative.engine", "narrative.cli",
               "narrative.api")

# rule -> whether the import ``imp`` made by the file at ``path`` breaks it
RULES: dict[str, Callable[[str, Imported], bool]] = {
    "pygit2 only in the store": lambda path, imp: (
        imp.module.split(".")[0] == "pygit2" and not _under(path, "store")),
    "pygit2 loads only through store.libgit": lambda path, imp: (
        imp.module.split(".")[0] == "pygit2" and path != "narrative/store/libgit.py"),
    "diffusers never import the engine or the cli": lambda path, imp: (
        _under(path, "diffusers")
        and imp.module.startswith(("narrative.engine", "narrative.cli", "narrative.api"))),
    "delta imports only the pure modules": lambda path, imp: (
        _under(path, "delta") and _narr(imp.module)
        and not imp.module.startswith("narrative.delta") and not _pure(imp.module)),
    "the store imports nothing above it": lambda path, imp: (
        _under(path, "store") and _within(imp.module, ABOVE_STORE)),
    "the engine never imports the cli": lambda path, imp: (
        _under(path, "engine") and imp.module.startswith(("narrative.cli", "narrative.api"))),
    # (serve/server.py runs the click commands a `narr` client sends it: that is its job)
    "the HTTP, MCP and studio transports never import the cli": lambda path, imp: (
        _under(path, "serve") and path != "narrative/serve/server.py"
        and _within(imp.module, ("narrative.cli",))),
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
        "narrative/store/x.py": "from narrative.delta.draft import Draft\nimport pygit2\n",
        "narrative/lore/x.py": "from narrative.store.view import WorldView\n",
    }
    saved = dict(SOURCES)
    try:
        SOURCES.update({p: ast.parse(src) for p, src in planted.items()})
        assert _violations("diffusers never import the engine or the cli")
        assert _violations("delta imports only the pure modules")
        assert _violations("pygit2 only in the store")
        assert _violations("the store imports nothing above it")
        assert [v for v in _violations("pygit2 loads only through store.libgit")
                if v.startswith("narrative/store/x.py")]
        assert _violations("the lore formats import only the pure modules")
        SOURCES["narrative/engine/y.py"] = ast.parse(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pygit2\n")
        assert any("engine/y.py" in v for v in _violations("pygit2 only in the store"))
        SOURCES["narrative/engine/z.py"] = ast.parse('def f(db):\n    db.execute("SELECT 1")\n')
        with pytest.raises(AssertionError):
            test_sql_only_in_the_store()
    finally:
        SOURCES.clear()
        SOURCES.update(saved)


# --- use, not only imports ------------------------------------------------------------------

# Modules outside the store that write files of their own, and what: the server's runtime
# files and the schema generator's output. Everything else writes through the store.
MAY_WRITE = {
    "narrative/serve/server.py": "the server's runtime files: server.json, its token, its socket",
    "narrative/cli/serve_cmd.py": "the log of a server started in the background",
    "narrative/serve/autostart.py": "the lock of a command starting a server, and that server's log",
    "narrative/schemas.py": "the JSON schemas it generates into schemas/",
    "narrative/lazy.py": "the names for type checkers it writes into the packages' own source",
}
GIT_HANDLES = {"repo", "_git"}  # WorldRepo.repo, and the git object inside a store value
WRITE_MODE = re.compile(r"[wax+]")
WRITING_CALLS = {("os", "replace"), ("os", "rename"), ("os", "renames"), ("os", "link"),
                 ("os", "symlink"), ("os", "truncate"), ("shutil", "copy"), ("shutil", "copy2"),
                 ("shutil", "copyfile"), ("shutil", "copytree"), ("shutil", "move")}
WRITING_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def _annotations(tree: ast.AST) -> list[ast.expr]:
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                        *([args.vararg] if args.vararg else []),
                        *([args.kwarg] if args.kwarg else [])]:
                if arg.annotation is not None:
                    out.append(arg.annotation)
            if node.returns is not None:
                out.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            out.append(node.annotation)
    return out


def _pygit2_names(tree: ast.AST) -> set[str]:
    """The names a module binds to pygit2 or to something imported from it."""
    names = {"pygit2"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pygit2":
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.asname or a.name for a in node.names if a.name.split(".")[0] == "pygit2")
    return names


def _names_in(annotation: ast.expr) -> set[str]:
    """Every root name an annotation mentions, string annotations included."""
    out = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                out |= _names_in(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                continue
    return out


def _mode_of(call: ast.Call, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "mode":
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _writes(call: ast.Call) -> str | None:
    """What file write ``call`` makes, if it is one the layer rules can see."""
    func = call.func
    name = _dotted(func)
    if isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes"):
        return f".{func.attr}(...)"
    if name is not None and tuple(name.rsplit(".", 1)) in WRITING_CALLS:
        return f"{name}(...)"
    if name == "os.open":
        if call.args and _dotted(call.args[0]) == "os.devnull":
            return None  # a child's stdio, not a file
        flags = {n.attr for n in ast.walk(call.args[1]) if isinstance(n, ast.Attribute)} \
            if len(call.args) > 1 else set()
        return "os.open(..., a writing flag)" if flags & WRITING_FLAGS else None
    if name in ("open", "io.open", "gzip.open", "os.fdopen"):  # open(file, mode)
        mode = _mode_of(call, 1)
        if mode is None:
            return None
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
            return f"{name}(..., {mode.value!r})" if WRITE_MODE.search(mode.value) else None
        return f"{name}(..., a mode read at run time)"
    if isinstance(func, ast.Attribute) and func.attr == "open":  # Path.open(mode)
        mode = _mode_of(call, 0)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) \
                and WRITE_MODE.search(mode.value):
            return f".open({mode.value!r})"
    return None


def _may_write(path: str) -> bool:
    return _under(path, "store") or path in MAY_WRITE


USE_RULES = ("the repository handle stays in the store", "pygit2 names only in the store",
             "files are written by the store")


def _use_violations(sources: dict[str, ast.AST] | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {rule: [] for rule in USE_RULES}
    for path, tree in (SOURCES if sources is None else sources).items():
        if _under(path, "store"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in GIT_HANDLES:
                out["the repository handle stays in the store"].append(
                    f"{path}:{node.lineno}: .{node.attr}")
            if isinstance(node, ast.Call) and not _may_write(path):
                what = _writes(node)
                if what is not None:
                    out["files are written by the store"].append(f"{path}:{node.lineno}: {what}")
        git_names = _pygit2_names(tree)
        for annotation in _annotations(tree):
            found = _names_in(annotation) & git_names
            if found:
                out["pygit2 names only in the store"].append(
                    f"{path}:{annotation.lineno}: {', '.join(sorted(found))}")
    return out


@pytest.mark.parametrize("rule", USE_RULES)
def test_use_points_down(rule: str) -> None:
    assert _use_violations()[rule] == []


def test_the_allowed_writers_exist() -> None:
    """An exemption for a module that is gone would wave the next one through."""
    assert all(path in SOURCES for path in MAY_WRITE)


PLANTED_USE = {
    "the repository handle stays in the store": [
        "def f(wr):\n    return wr.repo.head\n",
        "def f(commit):\n    return commit._git.message\n",
    ],
    "pygit2 names only in the store": [
        "def f(c: pygit2.Commit) -> None: ...\n",
        "def f(c: 'pygit2.Tree | None') -> None: ...\n",
        "from pygit2 import Oid\ndef f() -> list[Oid]: ...\n",
        "class A:\n    commit: pygit2.Commit\n",
    ],
    "files are written by the store": [
        "def f(p):\n    p.write_text('x')\n",
        "def f(p):\n    p.write_bytes(b'x')\n",
        "def f(p):\n    open(p, 'w').write('x')\n",
        "def f(p):\n    with open(p, mode='ab') as fh: fh.write(b'x')\n",
        "def f(p):\n    with open(p, 'xb') as fh: fh.write(b'x')\n",
        "def f(p):\n    with open(p, 'r+') as fh: fh.write('x')\n",
        "def f(p):\n    with p.open('wb') as fh: fh.write(b'x')\n",
        "def f(p, m):\n    open(p, m)\n",
        "import os\ndef f(fd):\n    os.fdopen(fd, 'w')\n",
        "import os\ndef f(a, b):\n    os.replace(a, b)\n",
        "import os\ndef f(a, b):\n    os.rename(a, b)\n",
        "import os\ndef f(p):\n    os.open(p, os.O_WRONLY | os.O_CREAT)\n",
        "import shutil\ndef f(a, b):\n    shutil.copy2(a, b)\n",
    ],
}
NOT_WRITES = [
    "def f(p):\n    return open(p).read()\n",
    "def f(p):\n    return open(p, 'rb').read()\n",
    "def f(p):\n    return open(p, encoding='utf-8').read()\n",
    "def f(p):\n    return p.read_text('utf-8')\n",
    "import os\ndef f(p):\n    return os.open(p, os.O_RDONLY)\n",
    "def f(opener, req):\n    return opener.open(req, timeout=3)\n",
    "def f(WorldRepo, root):\n    return WorldRepo.open(root)\n",
    "import webbrowser\ndef f(url):\n    webbrowser.open(url)\n",
]


@pytest.mark.parametrize("rule", sorted(PLANTED_USE))
def test_the_use_rules_see_a_violation(rule: str) -> None:
    """Each kind of planted use is caught, in the engine, the CLI, delta, the diffusers and the
    HTTP handlers alike; the store, and a module allowed its own files, may."""
    for source in PLANTED_USE[rule]:
        tree = ast.parse(source)
        for path in ("narrative/engine/x.py", "narrative/cli/x.py", "narrative/delta/x.py",
                     "narrative/diffusers/x.py", "narrative/serve/http.py", "narrative/api.py"):
            assert _use_violations({path: tree})[rule], (path, source)
        assert not _use_violations({"narrative/store/x.py": tree})[rule]
    if rule == "files are written by the store":
        tree = ast.parse(PLANTED_USE[rule][0])
        assert all(not _use_violations({path: tree})[rule] for path in MAY_WRITE)


@pytest.mark.parametrize("source", NOT_WRITES)
def test_a_read_is_no_write(source: str) -> None:
    assert _use_violations({"narrative/engine/x.py": ast.parse(source)}) == {
        rule: [] for rule in USE_RULES}
