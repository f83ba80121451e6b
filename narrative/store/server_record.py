"""What a running ``narr serve`` left in ``.git/narr/server.json``, for a reader that only asks.

The thin client (:mod:`narrative.client`) reads the same file to hand commands
over, and holds the one proof that a record names a live server of this world
(standard library only, so the store may ask it); this is the store's reading of
it for the engine (``narr doctor``), which may not import a transport: whether a
server runs, its pid and port, the narr version it runs (``0.1.0+<digest of its
source files and Python>``), what started it, the memory it holds and how long it
has been idle.
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
    current: bool = True  # it runs this very code (and Python): commands use it
    stopped: bool = False  # by SIGSTOP or Ctrl-Z: commands run without it meanwhile
    started_by: str | None = None  # "a narr command", "narr serve", "narr studio" ...
    memory_mib: float | None = None  # resident
    idle_s: float | None = None  # since its last request (None: it did not say)


def server_state(wr: WorldRepo) -> ServerState:
    """The world's server as its record proves it (:func:`narrative.client.proven_server`),
    with what it says of itself when asked: a record left by a crash, a reboot or a copied
    world says no server runs."""
    from narrative import client

    record = client.proven_server(wr.git_dir)
    if record is None:
        return ServerState(False)
    pid, port, version = record.get("pid"), record.get("port"), record.get("version")
    assert isinstance(pid, int)
    stopped = client.serving(record) == "stopped"
    live = None if stopped else client.ask(record, "status", timeout=2.0)
    memory = (live or {}).get("memory_mib")
    idle = (live or {}).get("idle_s")
    by = record.get("started_by")
    return ServerState(True, pid, port if isinstance(port, int) else None,
                       version if isinstance(version, str) else None,
                       current=version == client.code_version(), stopped=stopped,
                       started_by=by if isinstance(by, str) else None,
                       memory_mib=memory if isinstance(memory, int | float)
                       else client.resident_mib(pid),
                       idle_s=idle if isinstance(idle, int | float) else None)
