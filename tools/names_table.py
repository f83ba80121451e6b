"""Write what type checkers read of the names that load lazily, from the tables: the imports
into each module whose names load lazily (``narrative``, ``narrative.store``, from the module's
table: :mod:`narrative.lazy`), and the library's function of each row of the operations
(``narrative/calls.py``, from the rows: :mod:`narrative.operations.writer`).
``python tools/names_table.py`` after changing a table or a row; ``--check`` only says whether
each is current (the tests ask too)."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from narrative.lazy import block, rewrite, tables
from narrative.operations import table
from narrative.operations.writer import PATH, source

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = 0
    for name, (package, names) in tables().items():
        module = import_module(name).__file__
        assert module is not None
        if check:
            if block(package, names) not in Path(module).read_text("utf-8"):
                print(f"{module}: stale (python tools/names_table.py)")
                stale = 1
        elif rewrite(module, package, names):
            print(module)
    calls, written = ROOT / PATH, source(table())
    if calls.read_text("utf-8") != written:
        if check:
            print(f"{calls}: stale (python tools/names_table.py)")
            stale = 1
        else:
            calls.write_text(written, "utf-8")
            print(calls)
    return stale


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
