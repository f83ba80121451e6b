"""narr's own files beside the story, under ``.git/narr/``: one owner, :class:`PrivateState`.

Never tracked, never cloned, each recoverable or disposable: failed events kept for a retry
(``failed/KEY.json``), what the last reset restored (``last-reset.json``), which set-aside
edits were restored and when (``restored.json``), a merge stopped on conflicts
(``merge.json``) and the record a running server leaves for its clients (``server.json``).
The engine asks for these by what they are and never names a path here; every write
replaces the whole file (a reader sees the old bytes or the new). The lock, the journal and
the catalog, which live in the same folder, have owners of their own
(:mod:`~narrative.store.lock`, :mod:`~narrative.store.journal`, :mod:`~narrative.store.catalog`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from narrative import safejson

FAILED = "failed"
LAST_RESET = "last-reset.json"
RESTORED = "restored.json"
MERGE_STATE = "merge.json"
SERVER_FILE = "server.json"


@dataclass(frozen=True)
class ServerState:
    """A running server of the world, as its record proves it."""

    running: bool
    pid: int | None = None
    port: int | None = None
    version: str | None = None  # __version__ plus a digest of its source: another checkout differs
    current: bool = True  # it runs this very code (and Python): commands use it
    stopped: bool = False  # by SIGSTOP or Ctrl-Z: commands run without it meanwhile
    started_by: str | None = None  # "a narr command", "narr serve", "narr studio" ...
    memory_mib: float | None = None  # resident
    idle_s: float | None = None  # since its last request (None: it did not say)


class PrivateState:
    """The files of ``.git/narr/`` that are neither lock, journal nor catalog."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _write(self, path: Path, data: bytes) -> None:
        from narrative.store.journal import write_atomic

        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, self.path / "tmp")

    def _read_json(self, name: str) -> Any:
        """The JSON of one file here, or None when it is missing or unreadable."""
        try:
            return safejson.loads((self.path / name).read_text("utf-8"))
        except (OSError, ValueError):
            return None

    # --- failed events ------------------------------------------------------------------

    def failed(self) -> list[tuple[str, bytes]]:
        """``(key, bytes)`` of every kept failed event, by file name (unreadable ones skipped)."""
        directory = self.path / FAILED
        if not directory.is_dir():
            return []
        out = []
        for path in sorted(directory.glob("*.json")):
            with contextlib.suppress(OSError):
                out.append((path.stem, path.read_bytes()))
        return out

    def has_failed(self) -> bool:
        """Whether any failed event is kept (without reading one)."""
        directory = self.path / FAILED
        return directory.is_dir() and any(directory.glob("*.json"))

    def failed_names(self) -> list[str]:
        """The kept failed events' file names, sorted: a page's cheap sign that they changed."""
        directory = self.path / FAILED
        return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []

    def keep_failed(self, key: str, data: bytes) -> None:
        self._write(self.path / FAILED / f"{key}.json", data)

    def drop_failed(self, key: str) -> None:
        (self.path / FAILED / f"{key}.json").unlink(missing_ok=True)

    # --- the last reset -----------------------------------------------------------------

    def remember_reset(self, head: str, restored_from: str | None) -> None:
        """Which event's hand edits the reset to ``head`` restored (None: none).

        Every reset writes it, so it is put in place as a move puts a file (the old one
        removed, then the new renamed in): replacing it costs a reset milliseconds of
        flushing on ext4. Only writers read it, under the lock; a crash between the two
        steps loses it, and then a later reset merely sets those edits aside once more.
        """
        from narrative.store.journal import put_file

        data = {"head": head, "restored_from": restored_from}
        path = self.path / LAST_RESET
        put_file(path, json.dumps(data).encode(), self.path / "tmp" / f"{LAST_RESET}.new")

    def last_reset(self) -> tuple[str, str] | None:
        """``(head, restored_from)`` of the last reset that restored an event's edits."""
        data = self._read_json(LAST_RESET)
        if not isinstance(data, dict):
            return None
        head, restored = data.get("head"), data.get("restored_from")
        return (head, restored) if isinstance(head, str) and isinstance(restored, str) else None

    # --- set-aside edits restored -------------------------------------------------------

    def restored(self) -> dict[str, str]:
        """When each set-aside (by its ref) was last restored."""
        data = self._read_json(RESTORED)
        return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}

    def mark_restored(self, ref: str, when: str) -> None:
        marks = self.restored()
        marks[ref] = when
        self._write(self.path / RESTORED, json.dumps(marks, indent=1).encode())

    # --- a merge stopped on conflicts ---------------------------------------------------

    def merging(self) -> bool:
        """Whether a narr merge stopped on conflicts and waits (without reading its state)."""
        return (self.path / MERGE_STATE).exists()

    def merge_state(self) -> dict[str, Any] | None:
        """The stopped merge's state, or None when no merge is in progress."""
        try:
            data = safejson.loads((self.path / MERGE_STATE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return data if isinstance(data, dict) else None

    def save_merge_state(self, state: dict[str, Any]) -> None:
        """Write the state whole (a temporary file renamed over the old one)."""
        text = json.dumps(state, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        self._write(self.path / MERGE_STATE, text.encode("utf-8"))

    def drop_merge_state(self) -> bool:
        """Forget the stopped merge; False when there was none."""
        try:
            (self.path / MERGE_STATE).unlink()
        except FileNotFoundError:
            return False
        return True

    # --- the server's record ------------------------------------------------------------

    def server_state(self) -> ServerState:
        """The world's server as its record proves it, with what it says of itself when asked:
        a record left by a crash, a reboot or a copied world says no server runs."""
        from narrative import client

        record = client.proven_server(self.path.parent)
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
