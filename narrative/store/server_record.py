"""What a running ``narr serve`` left in ``.git/narr/server.json``, for a reader that only asks.

The thin client (:mod:`narrative.client`) reads the same file to hand commands
over; this is the store's reading of it for the engine (``narr doctor``), which
may not import a transport: whether a server runs, its pid and port, and the
narr version it runs (``0.1.0+<digest of its source files>``).
"""

from __future__ import annotations

import json
import os
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
    try:
        record = json.loads((wr.narr_dir / SERVER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ServerState(False)
    pid = record.get("pid") if isinstance(record, dict) else None
    if not isinstance(pid, int) or pid <= 0 or not _alive(pid):
        return ServerState(False)
    port, version = record.get("port"), record.get("version")
    return ServerState(True, pid, port if isinstance(port, int) else None,
                       version if isinstance(version, str) else None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
