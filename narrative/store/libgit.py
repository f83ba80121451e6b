"""The one import of pygit2: every store module takes it from here (``from
narrative.store.libgit import pygit2``), so it loads the same way in every process, and
only when first used.

When pygit2 loads it points libgit2's TLS at Python's default certificate file, and
OpenSSL then parses every certificate in it: about a sixth of the import, paid by every
narr command. narr never speaks TLS through libgit2 (clone, push and pull run the git
command), so the file is hidden for the import alone; the certificate directory stays set
(OpenSSL reads from it only for a connection) and the variable is put back at once.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import TYPE_CHECKING, Any


def _load() -> None:
    if "pygit2" in sys.modules:  # loaded already (a program that uses both): leave it be
        return
    saved = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = ""  # not a file: ssl.get_default_verify_paths() names none
    try:
        import pygit2  # noqa: F401
    finally:
        if saved is None:
            del os.environ["SSL_CERT_FILE"]
        else:
            os.environ["SSL_CERT_FILE"] = saved


class _OnFirstUse:
    """Stands for the pygit2 module, which it imports (through :func:`_load`) when an
    attribute is first asked for; each attribute is then kept on this object, so later
    lookups cost what a module's do. A command that never reaches git (``narr --help``, a
    served command's thin client) never asks, and never pays for the import."""

    def __getattr__(self, name: str) -> Any:
        _load()
        import pygit2 as module

        value = getattr(module, name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    import pygit2 as pygit2
else:
    pygit2 = _OnFirstUse()  # the name the store modules import


@cache
def c_layer() -> tuple[Any, Any] | None:
    """pygit2's own C bindings (``lib``, ``ffi``), for what its Python API leaves out
    (:mod:`narrative.store.clean_entry`); None where this pygit2 does not have them."""
    _load()
    try:
        from pygit2.ffi import C, ffi
    except ImportError:
        return None
    return (C, ffi) if hasattr(C, "git_index_add") else None
