"""Events and summaries: which commit holds an event id, and the one line a listing shows of it.

Both are keyed by ids that never change meaning (an event id, a commit id), so they
stay true whatever HEAD does; what is missing is filled from history
(:func:`narrative.store.history.index_all_events`, :func:`~narrative.store.history.summaries`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from narrative.store.catalog.connection import Connection
from narrative.store.records import Summary

_SUMMARY = "INSERT OR REPLACE INTO summary VALUES (?,?,?,?,?,?,?,?,?)"


class EventRef(NamedTuple):
    """Where an event is: its id and the commit that seals it."""

    event_id: str
    commit: str


class Verified(NamedTuple):
    """The story line ``narr check`` last found whole: its tip, and what it counted there."""

    commit: str
    events: int
    commits: int


class EventIndex(Connection):
    def verified(self) -> Verified | None:
        """The tip of the last story line ``narr check`` verified (None: never, or forgotten
        with the catalog)."""
        row = self.db.execute("SELECT value FROM meta WHERE key='verified'").fetchone()
        if row is None:
            return None
        parts = str(row[0]).split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            return None
        return Verified(parts[0], int(parts[1]), int(parts[2]))

    def remember_verified(self, mark: Verified) -> None:
        with self.atomic() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('verified', ?)",
                       (f"{mark.commit} {mark.events} {mark.commits}",))

    def remember_event(self, event_id: str, commit_id: str, summary: Summary | None = None) -> None:
        """Where an event is, and (``summary``) what a listing shows of it, so the log never
        parses a record narr has just written."""
        with self.atomic() as db:
            db.execute("INSERT OR REPLACE INTO events VALUES (?,?)", (event_id, commit_id))
            if summary is not None:
                db.execute(_SUMMARY, summary)

    def remember_events(self, rows: Iterable[tuple[str, str]]) -> None:
        """``(event id, commit id)`` of events found in history."""
        with self.atomic() as db:
            db.executemany("INSERT OR REPLACE INTO events VALUES (?,?)", rows)

    def find_events(self, prefix: str, *, suffix: bool = False) -> list[EventRef]:
        """Events whose id starts with ``prefix`` (or, with ``suffix``, ends with it)."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = "%" + escaped if suffix else escaped + "%"
        return list(map(EventRef._make, self.db.execute(
            "SELECT event_id, commit_id FROM events WHERE event_id LIKE ? ESCAPE '\\' LIMIT 20",
            (pattern,))))

    def summaries(self, commits: Iterable[str]) -> dict[str, Summary]:
        """Commit id -> summary, for each of ``commits`` summarised already."""
        rows = self._where_in("SELECT * FROM summary WHERE commit_id IN", commits)
        return {s.commit: s for s in map(Summary._make, rows)}

    def remember_summaries(self, rows: Iterable[Summary]) -> None:
        """Store summaries; a commit's summary never changes, so they stay true whatever HEAD does."""
        with self.atomic() as db:
            db.executemany(_SUMMARY, rows)
