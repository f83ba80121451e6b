"""The story as a log: the events of the first-parent chain and their records.

Reads never wait for the write lock and change nothing; ``log -n 20`` reads
twenty commits, whatever the length of the story.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from narrative.store import history, records
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    import pygit2

    from narrative.model import EventRecord


class Entry:
    """One commit of the story line and its record (None for a commit narr did not make).

    The record is shown from its JSON and validated into an
    :class:`~narrative.model.EventRecord` only when asked for, so reading the log
    never pays for building the models.
    """

    def __init__(self, commit: pygit2.Commit) -> None:
        self.commit = commit
        self.raw = records.decode_raw(commit.message)
        self._record: EventRecord | None = None

    @property
    def record(self) -> EventRecord | None:
        if self._record is None and self.raw is not None:
            self._record = records.decode(self.commit.message)
        return self._record

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commit": str(self.commit.id)}
        if self.raw is not None:
            out.update(self.raw)
        else:
            out.update({"kind": "commit", "id": None, "content": self.commit.message.strip(),
                        "diffusions": [], "edits": []})
        return out


def entry(commit: pygit2.Commit) -> Entry:
    return Entry(commit)


def log(wr: WorldRepo, limit: int | None = None, rev: str = "HEAD") -> list[Entry]:
    """Events along the first-parent chain from ``rev``, newest first."""
    if wr.repo.head_is_unborn:
        return []
    out: list[Entry] = []
    for commit in history.first_parent(history.resolve(wr, rev)):
        if limit is not None and len(out) >= limit:
            break
        out.append(entry(commit))
    return out


def show(wr: WorldRepo, rev: str = "HEAD") -> Entry:
    return entry(history.resolve(wr, rev))
