"""Write the imports type checkers read into each module whose names load lazily
(``narrative``, ``narrative.api``, ``narrative.store``), from the module's table
(:mod:`narrative.lazy`): ``python tools/names_table.py`` after changing a table;
``--check`` only says whether each block is current (tests/test_layers.py asks too)."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from narrative.lazy import block, rewrite, tables


def main(argv: list[str]) -> int:
    stale = 0
    for name, (package, table) in tables().items():
        source = import_module(name).__file__
        assert source is not None
        if "--check" in argv:
            if block(package, table) not in Path(source).read_text("utf-8"):
                print(f"{source}: stale (python tools/names_table.py)")
                stale = 1
        elif rewrite(source, package, table):
            print(source)
    return stale


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
