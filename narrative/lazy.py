"""Packages whose names load on first use, from one table of where each is defined.

``narrative`` (the library) and ``narrative.store`` (the store's face) each hold a table,
name -> ``"module:attribute"`` (a module starting with ``.`` is the package's own), and
:func:`attach` makes the package's ``__getattr__`` from it: importing the package costs
nothing, and using a name imports only the module that defines it. Type checkers cannot
run ``__getattr__``, so each package ends with a block of imports under ``TYPE_CHECKING``,
written from the same table by ``python -m narrative.lazy`` (a test fails when it is stale):
one table, never a second list kept by hand.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

BEGIN = "# --- names for type checkers, written from the table by `python -m narrative.lazy` ---"
END = "# --- end of the names written from the table ---"


def where(package: str, spec: str, name: str) -> tuple[str, str]:
    """``(module, attribute)`` a table entry names."""
    module, _, attribute = spec.partition(":")
    return (package + module if module.startswith(".") else module), attribute or name


def attach(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any],
                                                           Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, from ``table``."""

    def __getattr__(name: str) -> Any:
        spec = table.get(name)
        if spec is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = where(package, spec, name)
        value = getattr(import_module(module), attribute)
        setattr(sys.modules[package], name, value)  # asked once: the next use is a plain lookup
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__, sorted(table)


def block(package: str, table: Mapping[str, str]) -> str:
    """The imports a type checker reads for ``table``, as the package's source holds them."""
    lines = [BEGIN, "TYPE_CHECKING = False", "if TYPE_CHECKING:"]
    for name in sorted(table, key=lambda n: (where(package, table[n], n), n)):
        module, attribute = where(package, table[name], name)
        lines.append(f"    from {module} import {attribute} as {name}")
    lines.append("")
    lines.append("    __all__ = [")
    lines += [f'        "{name}",' for name in sorted(table, key=_isort)]
    lines += ["    ]", END]
    return "\n".join(lines) + "\n"


def _isort(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in: constants, classes, then the rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def rewrite(path: str, package: str, table: Mapping[str, str]) -> bool:
    """Bring the written block of the package at ``path`` up to ``table``; True when it changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start, stop = text.index(BEGIN), text.index(END) + len(END) + 1
    new = text[:start] + block(package, table) + text[stop:]
    if new == text:
        return False
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(new)
    return True


def packages() -> dict[str, Mapping[str, str]]:
    """Every package with a table: the library's names and the store's face."""
    import narrative.store

    return {"narrative.store": narrative.store.FACE}


if __name__ == "__main__":
    for name, table in packages().items():
        source = sys.modules[name].__file__
        assert source is not None
        if rewrite(source, name, table):
            print(source)
