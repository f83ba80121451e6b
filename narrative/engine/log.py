"""The story as a log: the events of the first-parent chain and their records.

Reads never wait for the write lock and change nothing; ``log -n 20`` reads
twenty commits, whatever the length of the story.

``log`` takes what ``git log`` takes for one line: a revision, or ``A..B`` (the
events on B's first-parent line that A does not reach; an empty side is HEAD).
``log_of`` also takes a node: the events that touched it (its changes, hand edits
recorded on it, relations other nodes' events pointed at it), read from
:func:`~narrative.engine.history_of.history_of`. The argument is a revision first,
then a node; text that is both is refused rather than guessed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from narrative.errors import InvalidInputError, NotFoundError
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
    """Events along the first-parent chain from ``rev`` (or ``A..B``), newest first."""
    if wr.repo.head_is_unborn:
        return []
    since: pygit2.Commit | None = None
    if ".." in rev:
        left, _, right = rev.partition("..")
        if right.startswith("."):
            raise InvalidInputError(f"{rev!r}: A...B is not supported; narr log A..B lists "
                                    "the events on B's line that A does not reach")
        since = history.resolve(wr, left or "HEAD")
        rev = right or "HEAD"
    out: list[Entry] = []
    for commit in history.first_parent(history.resolve(wr, rev)):
        if limit is not None and len(out) >= limit:
            break
        if since is not None and history.is_ancestor(wr, commit.id, since.id):
            break
        out.append(entry(commit))
    return out


def log_of(wr: WorldRepo, what: str = "HEAD", limit: int | None = None, *,
           node: bool | None = None) -> list[Entry]:
    """``log`` for a revision or range, or the events that touched a node, newest first.

    ``node`` None decides (a revision first, then a node name, alias or id; both is an
    error), True takes ``what`` as a node, False as a revision.
    """
    if node is False or ".." in what or wr.repo.head_is_unborn or (node is None and what == "HEAD"):
        return log(wr, limit, what)  # plain `narr log` asks nothing of the names: no walk
    from narrative.engine.naming import Names

    if node is True:
        return node_log(wr, Names(wr).resolve(what, must_exist=False), limit)
    try:
        commit = history.resolve(wr, what)
    except NotFoundError:
        commit = None
    names = Names(wr)
    found = names.candidates(what.strip())
    if commit is None:
        if len(found) == 1:
            return node_log(wr, found[0], limit)
        if found:
            names.resolve(what)  # raises, naming the nodes that carry the name
        try:  # an id of a node that has ended
            return node_log(wr, names.resolve(what, must_exist=False), limit)
        except NotFoundError:
            raise NotFoundError(f"{what!r} is neither a revision nor a node of this story",
                                hint=names.hint(what)) from None
    if found:
        raise InvalidInputError(
            f"{what!r} is both a revision ({str(commit.id)[:10]}) and a node ({', '.join(found)})",
            hint=f"narr log --node {what} for the node; narr log {what}^0 for the revision")
    return log(wr, limit, what)


def node_log(wr: WorldRepo, node_id: str, limit: int | None = None) -> list[Entry]:
    """The events on the story line that changed ``node_id``, recorded a hand edit on it or
    changed a relation pointing at it, newest first (mentions alone do not count)."""
    from narrative.engine.history_of import history_of

    touched = [e.event.commit for e in history_of(wr, node_id).events if e.changes]
    touched.reverse()
    if limit is not None:
        touched = touched[:limit]
    out = []
    for commit_id in touched:
        commit = history.peel_commit(wr, commit_id)
        if commit is not None:
            out.append(entry(commit))
    return out


def show(wr: WorldRepo, rev: str = "HEAD") -> Entry:
    return entry(history.resolve(wr, rev))
