"""Many events in one go, for programs that drive a story through the library.

A single event pays for two whole-world operations that keep the working tree
honest: the stat-cache scan that finds hand edits, and rewriting git's index.
Both grow with the world (about 0.25 s and 0.05 s at 100k nodes), which is
right for one event typed by a person and wrong for an agent playing a
thousand. Inside ``batch(wr)`` the write lock is held once, the first event
absorbs the hand edits found at its start, later events skip the scan, and the
index is written once at the end, so an event costs what it touches whatever
the size of the world.

Nothing is lost or unrecorded: hand edits made during the batch are picked up
by the first event after it (the journal never overwrites a file the user
changed), and if the batch is cut short, the index entries it deferred are
found stale and repaired by the next full scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from narrative.store import journal, maintenance
from narrative.store.worldrepo import WorldRepo


@dataclass
class Batch:
    """What a batch remembers between its events."""

    # An event has recorded the hand edits found at the batch's start: skip the scan.
    clean: bool = False
    # Index entries (path -> blob id, None: removed) written once, when the batch ends.
    deferred_index: dict[str, str | None] = field(default_factory=dict)
    # Notes of the interrupted write the batch finished before its first event.
    recovered: list[str] = field(default_factory=list)


@contextmanager
def batch(wr: WorldRepo) -> Iterator[WorldRepo]:
    """Run events (``run_event``, ``replay``...) on ``wr`` inside; nesting is harmless."""
    if wr.batch is not None:
        yield wr
        return
    with wr.lock:
        note = journal.recover(wr)
        wr.batch = Batch(recovered=[note] if note else [])
        try:
            yield wr
        finally:
            deferred, wr.batch = wr.batch.deferred_index, None
            journal.flush_index(wr, deferred)
        maintenance.auto_gc(wr)
