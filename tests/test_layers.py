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
    "narrative/diffusers/servers.py": "the user's cache of what each LLM server took "
                                      "(~/.cache/narr/llm-servers.json), never a world's file",
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


# --- the store's face, the floors of the package, and circles ---------------------------------

def _store_face() -> set[str]:
    from narrative.store import FACE

    return set(FACE)


def _face_violations(sources: dict[str, ast.AST] | None = None) -> list[str]:
    """Imports of a store module, or of a name the face does not hold, from outside the store."""
    face = _store_face()
    out = []
    for path, tree in (SOURCES if sources is None else sources).items():
        if _under(path, "store"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out += [f"{path}:{node.lineno}: import {a.name}" for a in node.names
                        if a.name.startswith("narrative.store.")]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.startswith("narrative.store."):
                    out.append(f"{path}:{node.lineno}: from {node.module} import ...")
                elif node.module == "narrative.store":
                    out += [f"{path}:{node.lineno}: {a.name} is not on the store's face"
                            for a in node.names if a.name not in face]
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id == "store" and node.attr not in face | {"FACE"}):
                out.append(f"{path}:{node.lineno}: store.{node.attr} is not on the store's face")
    return out


def test_above_the_store_only_its_face_is_imported() -> None:
    assert _face_violations() == []


def test_the_face_rule_sees_a_violation() -> None:
    for source in ("from narrative.store.history import resolve\n",
                   "import narrative.store.refs\n",
                   "from narrative.store import history\n",
                   "from narrative import store\nstore.history.resolve(wr, 'HEAD')\n",
                   "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                   "    from narrative.store.worldrepo import WorldRepo\n"):
        assert _face_violations({"narrative/engine/x.py": ast.parse(source)}), source
    assert not _face_violations({"narrative/store/x.py": ast.parse(
        "from narrative.store.history import resolve\n")})
    assert not _face_violations({"narrative/engine/x.py": ast.parse(
        "from narrative.store import WorldRepo, resolve_rev\n")})


def test_every_name_on_the_face_is_defined_where_it_says() -> None:
    import importlib

    from narrative.lazy import where
    from narrative.store import FACE

    for name, spec in FACE.items():
        module, attribute = where("narrative.store", spec, name)
        assert hasattr(importlib.import_module(module), attribute), (name, spec)


def test_no_name_on_a_face_is_a_module_of_its_package() -> None:
    """``narrative.store.batch`` is a module: once anything imports it, Python binds the name
    to the module on the package, and the face's function of that name is never asked for."""
    from narrative.lazy import tables, where

    for name, (package, table) in tables().items():
        folder = PACKAGE.parent / package.replace(".", "/")
        for entry, spec in table.items():
            _, attribute = where(package, spec, entry)
            if attribute:  # a module entry (narrative.ops) names its module on purpose
                assert not (folder / f"{entry}.py").exists() and not (folder / entry).is_dir(), (
                    f"{name}: {entry} is a module of {package} too")


def test_the_names_for_type_checkers_are_written_from_the_tables() -> None:
    """The imports under ``TYPE_CHECKING`` of each lazy package are the ones its table makes
    (``python tools/names_table.py`` rewrites them)."""
    from importlib import import_module

    from narrative.lazy import block, tables

    for name, (package, table) in tables().items():
        source = import_module(name).__file__
        assert source is not None
        assert block(package, table) in Path(source).read_text("utf-8"), (
            f"{source}: run python tools/names_table.py")


# The floors of the package, from the ground up: a module imports only modules of its own
# floor or below (the rules above say more about some floors). The transports stand on top;
# the pure data and rules at the bottom.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("pure data and rules", ("narrative.errors", "narrative.safejson", "narrative.invocation",
                             "narrative.ids", "narrative.lazy", "narrative.nodefile",
                             "narrative.model", "narrative.fields", "narrative.ops",
                             "narrative.config", "narrative.userconfig", "narrative.answers",
                             "narrative.shapes", "narrative.bounded")),
    ("formats and the event pipeline", ("narrative.lore", "narrative.delta")),
    ("the store", ("narrative.store",)),
    ("the diffusers", ("narrative.diffusers",)),
    ("the use cases", ("narrative.engine",)),
    ("the operations", ("narrative.operations", "narrative.schemas", "narrative.answer_models")),
    ("the library", ("narrative.api", "narrative.library", "narrative.calls")),
    ("the transports", ("narrative.cli", "narrative.serve", "narrative.client", "narrative.interrupted",
                        "narrative.__main__")),
]


def _module_of(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def _floor(module: str) -> int:
    """The floor of ``module`` (the longest package of :data:`FLOORS` that holds it); the
    package's root (its version, its table of names) is on the ground, as every module
    imports it."""
    if module == "narrative":
        return 0
    best, found = -1, -1
    for n, (_, modules) in enumerate(FLOORS):
        for m in modules:
            if (module == m or module.startswith(m + ".")) and len(m) > best:
                best, found = len(m), n
    return found


def _edges(sources: dict[str, ast.AST]) -> list[tuple[str, str, int]]:
    """``(importer, imported, line)`` between the package's modules, lazy imports included
    (those under ``TYPE_CHECKING`` left out: they run for a type checker only); ``from P
    import M`` of a submodule M is an import of M."""
    known = {_module_of(p) for p in sources}
    out = []
    for path, tree in sources.items():
        me = _module_of(path)
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = [f"{node.module}.{a.name}" for a in node.names
                        if f"{node.module}.{a.name}" in known]
                targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            for target in targets:
                if _narr(target) and target != me:
                    out.append((me, target, node.lineno))
    typing_only = {(p, i.line) for p, tree in sources.items() for i in _imports(tree) if i.typing_only}
    return [(a, b, line) for a, b, line in out
            if (a.replace(".", "/") + ".py", line) not in typing_only
            and (a.replace(".", "/") + "/__init__.py", line) not in typing_only]


# Imports that break the rules below and are still to go: the thin client holds the proof that
# a server's record is true, which the store and the server starter borrow from it.
STILL_TO_GO = {("narrative.store.private", "narrative.client"),
               ("narrative.serve.autostart", "narrative.client")}


def _upward(sources: dict[str, ast.AST] | None = None) -> list[str]:
    return [f"{a}:{line} ({FLOORS[_floor(a)][0]}) imports {b} ({FLOORS[_floor(b)][0]})"
            for a, b, line in _edges(SOURCES if sources is None else sources)
            if _floor(b) > _floor(a) and (sources is not None or (a, b) not in STILL_TO_GO)]


def test_no_module_imports_one_of_a_higher_floor() -> None:
    unplaced = sorted({_module_of(p) for p in SOURCES if _floor(_module_of(p)) < 0})
    assert unplaced == []
    assert _upward() == []


def _circles(sources: dict[str, ast.AST] | None = None) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in _edges(SOURCES if sources is None else sources):
        if sources is None and (a, b) in STILL_TO_GO:
            continue
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _package(module: str, sources: dict[str, ast.AST]) -> str:
    """The package a module is a file of (a package's ``__init__`` is a file of itself)."""
    if f"{module.replace('.', '/')}/__init__.py" in sources:
        return module
    return module.rpartition(".")[0]


def test_no_circle_of_modules_crosses_a_package() -> None:
    """Modules may import each other in a circle inside one package (the store's handle and
    its journal), never across packages: each package stands on the ones below it."""
    crossing = [group for group in _circles() if len({_package(m, SOURCES) for m in group}) > 1]
    assert crossing == []


def test_the_floor_and_circle_rules_see_a_violation() -> None:
    planted = {"narrative/store/x.py": ast.parse("from narrative.engine.event import run_event\n"),
               "narrative/engine/event.py": ast.parse("import narrative.store.x\n")}
    assert _upward(planted)
    circle = {"narrative/fields.py": ast.parse("def f():\n    from narrative.delta import draft\n"),
              "narrative/delta/draft.py": ast.parse("from narrative import fields\n"),
              "narrative/delta/__init__.py": ast.parse("")}
    assert [g for g in _circles(circle) if len({_package(m, circle) for m in g}) > 1]
    inside = {"narrative/store/a.py": ast.parse("from narrative.store import b\n"),
              "narrative/store/b.py": ast.parse("from narrative.store import a\n"),
              "narrative/store/__init__.py": ast.parse("")}
    assert _circles(inside) and all(len({_package(m, inside) for m in g}) == 1
                                    for g in _circles(inside))


def _private_paths(sources: dict[str, ast.AST] | None = None) -> list[str]:
    """Code above the store that names narr's own folder (``wr.narr_dir``, ``".git/narr"``) or
    joins ``"narr"`` under a git directory: those files are the store's (``WorldRepo.private``)."""
    out = []
    for path, tree in (SOURCES if sources is None else sources).items():
        if not _under(path, "engine", "delta", "diffusers") and path not in (
                "narrative/operations.py", "narrative/library.py"):
            continue
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "narr_dir":
                out.append(f"{path}:{node.lineno}: .narr_dir")
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in docs and ".git/narr" in node.value):
                out.append(f"{path}:{node.lineno}: {node.value[:40]!r}")
            elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                  and isinstance(node.right, ast.Constant) and node.right.value == "narr"
                  and path not in MAY_WRITE):  # (a user's cache of its own: ~/.cache/narr)
                out.append(f"{path}:{node.lineno}: / \"narr\"")
    return out


def test_the_use_cases_name_no_file_of_narrs_own() -> None:
    assert _private_paths() == []
    for source in ("def f(wr):\n    return wr.narr_dir / 'failed'\n",
                   "def f(wr):\n    return wr.git_dir / 'narr' / 'merge.json'\n",
                   "P = '.git/narr/last-reset.json'\n"):
        assert _private_paths({"narrative/engine/x.py": ast.parse(source)}), source
