"""Packages whose names load on first use, from one table of where each is defined.

``narrative`` (the library; :mod:`narrative.api`, its other name, takes its names) and
``narrative.store`` (the store's face) each hold a table (``_FACE``, ``FACE``): name ->
``"module:attribute"`` (``.module`` is one of the package's own; ``module:`` is the module
itself). :func:`attach` makes the package's ``__getattr__`` from it: importing the package
costs nothing, and using a name imports only the module that defines it. Type checkers cannot
run ``__getattr__``, so each of these modules ends with a block of imports under
``TYPE_CHECKING``, written from the same table by ``python tools/names_table.py`` (a test fails
when one is stale): one table, never a second list kept by hand.

Imported by every ``narr`` command before anything else, so it imports nothing at run time
(not even :mod:`typing`): a thin client's start is counted in milliseconds.
:mod:`narrative.api` reads the package's block (``from narrative import *`` for type
checkers), so the package's names are written once.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

BEGIN = "# --- names for type checkers, written from the table by tools/names_table.py ---"
END = "# --- end of the names written from the table ---"

LAZY: dict[str, tuple[str, str]] = {"narrative": ("narrative", "_FACE"),
                                    "narrative.store": ("narrative.store", "FACE")}
"""Every module whose names come from a table: the package that holds the table, and its name."""


def where(package: str, spec: str, name: str) -> tuple[str, str]:
    """``(module, attribute)`` an entry of ``package``'s table names; attribute ``""``: the
    module itself."""
    module, colon, attribute = spec.partition(":")
    module = package + module if module.startswith(".") else module
    return module, attribute if colon else name


def attach(package: str, table: Mapping[str, str], *, here: str | None = None
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for the module ``here`` (by default the
    package itself), its names those of ``package``'s ``table``."""
    home = here or package

    def __getattr__(name: str) -> Any:
        spec = table.get(name)
        if spec is None:
            raise AttributeError(f"module {home!r} has no attribute {name!r}")
        from importlib import import_module

        module, attribute = where(package, spec, name)
        loaded = import_module(module)
        value = getattr(loaded, attribute) if attribute else loaded
        setattr(sys.modules[home], name, value)  # asked once: the next use is a plain lookup
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[home]), *table})

    return __getattr__, __dir__, sorted(table)


def _isort(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in: constants, classes, then the rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def block(package: str, table: Mapping[str, str]) -> str:
    """The imports a type checker reads for ``table``, as the module's source holds them."""
    lines = [BEGIN, "TYPE_CHECKING = False", "if TYPE_CHECKING:"]
    imports = []
    for name in table:
        module, attribute = where(package, table[name], name)
        if not attribute:  # the module itself
            module, _, attribute = module.rpartition(".")
        imports.append((module, _isort(attribute), name))
    for module, (_, attribute), name in sorted(imports):  # as ruff sorts them
        lines.append(f"    from {module} import {attribute} as {name}")
    lines.append("")
    lines.append("    __all__ = [")
    lines += [f'        "{name}",' for name in sorted(table, key=_isort)]
    lines += ["    ]", "del TYPE_CHECKING", END]
    return "\n".join(lines) + "\n"


def rewrite(path: str, package: str, table: Mapping[str, str]) -> bool:
    """Bring the written block of the module at ``path`` up to ``table``; True when it changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start, stop = text.index(BEGIN), text.index(END) + len(END) + 1
    new = text[:start] + block(package, table) + text[stop:]
    if new == text:
        return False
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(new)
    return True


def tables() -> dict[str, tuple[str, Mapping[str, str]]]:
    """Each module of :data:`LAZY`: the package its names are relative to, and their table."""
    from importlib import import_module

    return {module: (package, getattr(import_module(package), table))
            for module, (package, table) in LAZY.items()}

