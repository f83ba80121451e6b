"""What a running ``narr serve`` left in ``.git/narr/server.json``, for a reader that only asks.

The thin client (:mod:`narrative.client`) reads the same file to hand commands
over, and holds the one proof that a record names a live server of this world
(standard library only, so the store may ask it); this is the store's reading of
it for the engine (``narr doctor``), which may not import a transport: whether a
server runs, its pid and port, and the narr version it runs (``0.1.0+<digest of
its source files>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from narrative.store.worldrepo import WorldRepo

SERVER_FILE = "server.json"


@dataclass(frozen=True)
class ServerState:
    running: bool
    pid: int | None = None
    port: int | None = None
    version: str | None = None  # __version__ plus a digest of its source: another checkout differs


def server_state(wr: WorldRepo) -> ServerState:
    """The world's server as its record proves it (:func:`narrative.client.proven_server`):
    a record left by a crash, a reboot or a copied world says no server runs."""
    from narrative.client import proven_server

    record = proven_server(wr.git_dir)
    if record is None:
        return ServerState(False)
    pid, port, version = record.get("pid"), record.get("port"), record.get("version")
    return ServerState(True, pid if isinstance(pid, int) else None,
                       port if isinstance(port, int) else None,
                       version if isinstance(version, str) else None)
